#!/usr/bin/env bash
# ./fx setup --kokkos 4: Kokkos 4.6.01 with the OpenMP backend (and Serial)
# from the release source in ../shared/deps (the build machines cannot
# download it), built once into a prefix outside the tracked tree and reused
# after (a stamp names the source's checksum). Prints the prefix.
#
#   FX_KOKKOS_SOURCE    the tarball (default ../shared/deps/kokkos-4.6.01.tar.gz)
#   FX_KOKKOS4_BACKEND  openmp (default); cuda: the CUDA backend compiled by
#                       nvcc for an NVIDIA H100/H200 (sm_90), the source
#                       adapted to CUDA 13 (scripts/gpu/kokkos-4.6.01-cuda13.patch);
#                       hip: the HIP backend compiled by hipcc for an AMD
#                       MI200 (gfx90a); sycl: the SYCL backend for an Intel
#                       PVC GPU, configured, not built (no SYCL compiler
#                       here), with oneAPI's SYCL headers from PyPI's
#                       intel-sycl-rt: the source and configured tree stay
#                       in the prefix, whose include_dirs lists the
#                       directories a host-pass compile needs. cuda, hip,
#                       sycl: scripts/device_compile_check.sh
#   FX_KOKKOS4_PREFIX   where it goes (default .deps/kokkos-4.6.01-<backend>)
#   FX_SYCL_HOST_CXX    sycl: the clang that configures it (required; the
#                       device check sets it)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=4.6.01
# ../shared/deps/README.md gives this checksum; a tarball that differs is not the release.
sha256=7b9d6da9020f399a05a03a91bf73c3426cbd83c60aec5fe92bfb968c0effca8c
src=${FX_KOKKOS_SOURCE:-$root/../shared/deps/kokkos-$version.tar.gz}
backend=${FX_KOKKOS4_BACKEND:-openmp}
case $backend in
  openmp) flags=(-DKokkos_ENABLE_OPENMP=ON) ;;
  cuda) flags=(-DKokkos_ENABLE_CUDA=ON -DKokkos_ARCH_HOPPER90=ON) ;;  # the compiler: its nvcc_wrapper, below
  hip) flags=(-DKokkos_ENABLE_HIP=ON -DKokkos_ARCH_AMD_GFX90A=ON -DKokkos_ENABLE_ROCTHRUST=OFF -DCMAKE_CXX_COMPILER=hipcc) ;;
  sycl) flags=(-DKokkos_ENABLE_SYCL=ON -DKokkos_ARCH_INTEL_PVC=ON -DKokkos_ENABLE_ONEDPL=OFF) ;;
  *) echo "fx setup --kokkos 4: FX_KOKKOS4_BACKEND is '$backend'; expected openmp, cuda, hip or sycl" >&2; exit 2 ;;
esac
prefix=${FX_KOKKOS4_PREFIX:-$root/.deps/kokkos-$version-$backend}
stamp=$prefix/.fx-kokkos-$sha256

# SYCL: oneAPI's SYCL headers (the 2025.1 release: Kokkos 4.6 names
# sycl::ext::intel::device_ptr, which 2026 removed) from PyPI's runtime
# wheel, which has no compiler; Kokkos configured with Debian's clang (its
# generated headers), the source and the configured tree kept.
sycl_rt=2025.1.1
if [ "$backend" = sycl ]; then
  sycl_cxx=${FX_SYCL_HOST_CXX:?fx setup --kokkos 4: sycl needs FX_SYCL_HOST_CXX, the clang to configure with}
  stamp=$stamp-sycl-rt-$sycl_rt-${sycl_cxx##*/}  # another header release or clang: configured again
fi
configure_sycl() {  # WORK (the source extracted there)
  mkdir -p "$prefix/sycl"
  # The venv's pip (./fx setup's): Debian's python3 may have none.
  "${FX_VENV:-$root/.venv}/bin/python3" -m pip download -q --no-deps --only-binary=:all: -d "$1" \
    "intel-sycl-rt==$sycl_rt" >&2 ||
    { echo "fx setup --kokkos 4: pip could not download intel-sycl-rt==$sycl_rt from PyPI (above)" >&2; exit 1; }
  # Only its headers: the wheel's data/include becomes prefix/sycl/include.
  python3 - "$1"/intel_sycl_rt-*.whl "intel_sycl_rt-$sycl_rt.data/data/" "$prefix/sycl" <<'PY'
import sys, zipfile
wheel, top, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for m in z.infolist():
        if m.filename.startswith(top + "include/"):
            m.filename = m.filename[len(top):]
            z.extract(m, dest)
PY
  [ -f "$prefix/sycl/include/sycl/sycl.hpp" ] ||
    { echo "fx setup --kokkos 4: intel-sycl-rt==$sycl_rt's wheel has no include/sycl/sycl.hpp" >&2; exit 1; }
  mv "$1/kokkos-$version" "$prefix/source"
  cmake -S "$prefix/source" -B "$prefix/build" -DCMAKE_CXX_COMPILER="$sycl_cxx" -DCMAKE_CXX_STANDARD=17 \
    "${flags[@]}" -DKokkos_ENABLE_SERIAL=ON -DCMAKE_CXX_FLAGS="-isystem $prefix/sycl/include" \
    >"$prefix/configure.log" 2>&1 || { tail -n 30 "$prefix/configure.log" >&2; exit 1; }
  # What a source including Kokkos_Core.hpp needs (Kokkos' own build's include path, and SYCL's).
  printf '%s\n' "$prefix/build/core/src" "$prefix/source/core/src" "$prefix/build" \
    "$prefix/source/tpls/desul/include" "$prefix/source/tpls/mdspan/include" "$prefix/sycl/include" \
    >"$prefix/include_dirs"
}

if [ -f "$stamp" ]; then
  echo "$prefix"
  exit 0
fi
if [ ! -r "$src" ]; then
  echo "fx setup --kokkos 4: no Kokkos $version source at '$src' (FX_KOKKOS_SOURCE)" >&2
  exit 2
fi
got=$(sha256sum "$src" | cut -d' ' -f1)
if [ "$got" != "$sha256" ]; then
  echo "fx setup --kokkos 4: '$src' has sha256 $got, expected $sha256 (Kokkos $version)" >&2
  exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/fx-kokkos4.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$SECONDS
echo "fx setup --kokkos 4: $([ "$backend" = sycl ] && echo configuring || echo building) Kokkos $version ($backend, Serial) into $prefix" >&2
tar -xzf "$src" -C "$work"
if [ "$backend" = cuda ]; then
  patch -s -d "$work/kokkos-$version" -p1 <"$root/scripts/gpu/kokkos-$version-cuda13.patch"
  flags+=(-DCMAKE_CXX_COMPILER="$work/kokkos-$version/bin/nvcc_wrapper")
fi
rm -rf "$prefix"
if [ "$backend" = sycl ]; then
  configure_sycl "$work"
  touch "$stamp"
  echo "$prefix"
  exit 0
fi
cmake -S "$work/kokkos-$version" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 \
  "${flags[@]}" -DKokkos_ENABLE_SERIAL=ON -DBUILD_SHARED_LIBS=ON -DKokkos_ENABLE_TESTS=OFF \
  -DKokkos_ENABLE_EXAMPLES=OFF -DCMAKE_INSTALL_PREFIX="$prefix" >"$work/configure.log" 2>&1 ||
  { tail -n 30 "$work/configure.log" >&2; exit 1; }
cmake --build "$work/build" -j "${FX_JOBS:-$(nproc)}" --target install >"$work/build.log" 2>&1 ||
  { tail -n 30 "$work/build.log" >&2; exit 1; }
touch "$stamp"
echo "fx setup --kokkos 4: built in $((SECONDS - start)) s" >&2
echo "$prefix"
