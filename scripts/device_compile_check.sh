#!/usr/bin/env bash
# The device compile checks (./fx test's cuda_compile, hip_compile and
# sycl_compile; issue 43): Kokkos 4.6.01 with a GPU backend
# (scripts/kokkos4.sh, FX_KOKKOS4_BACKEND=cuda|hip|sycl), then fx compiled
# against it: the library with the data store's device staging on a stream
# of its own, the device benchmark and the three mini-apps. Compiling needs
# no GPU; nothing runs.
#   cuda: nvcc through Kokkos' nvcc_wrapper, for an NVIDIA H100/H200 (sm_90)
#   hip:  hipcc, for an AMD MI200 (gfx90a)
#   sycl: no SYCL compiler can be had here: Debian's clang (FX_SYCL_HOST_CXX,
#         default clang++-14) in its SYCL host mode, against oneAPI's SYCL
#         headers (scripts/sycl_host_compile.py): the sources below, host
#         code only, no device code; the main build's flags (FX_BUILD_DIR)
# Exit 77 (ctest: skipped) with one line when the compiler is not there.
#
#   scripts/device_compile_check.sh cuda|hip|sycl [BUILD_DIR]   (default build-<backend>)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
backend=${1:-}
build=${2:-$root/build-$backend}
case $backend in
  cuda) compiler=nvcc arch=sm_90 stream=cudaStreamCreateWithFlags install="the CUDA toolkit" ;;
  hip) compiler=hipcc arch=gfx90a stream=hipStreamCreateWithFlags install="Debian: apt install hipcc" ;;
  sycl) compiler=${FX_SYCL_HOST_CXX:-clang++-14} arch=intel_gpu_pvc install="Debian: apt install clang-14"
    stream="sycl::_V1::queue::queue(sycl::_V1::context const&, sycl::_V1::device const&" ;;
  *) echo "device_compile_check: the backend is '$backend'; expected cuda, hip or sycl" >&2; exit 2 ;;
esac
check=${backend}_check
if ! command -v "$compiler" >/dev/null; then
  echo "$check: skipped: no $compiler on this machine ($install)"
  exit 77
fi
# shellcheck source=scripts/env.sh
source "$root/scripts/env.sh"  # the venv's Open MPI (ULFM)
start=$SECONDS
kokkos=$(FX_KOKKOS4_BACKEND=$backend FX_SYCL_HOST_CXX=$compiler "$root/scripts/kokkos4.sh")
log=$build/$check.log
mkdir -p "$build"
if [ "$backend" = sycl ]; then
  # fx's own SYCL code (the staging's queue and checksum kernel, the device
  # choice and its test) and the GPU programs' kernels (the device-member
  # test, the mini-apps, whose baselines share their kernels' headers, and
  # the device benchmark).
  sources=(data-store/src/device_staging.cpp framework/src/device_session.cpp
    tests/unit/framework/device_map_test.cpp tests/unit/data_store/device_member_test.cpp
    miniapps/stencil/stencil.cpp miniapps/minife/minife.cpp miniapps/md/md.cpp bench/device/device_bench.cpp)
  echo "$check: ${#sources[@]} sources with Kokkos $kokkos (sycl, $arch), $compiler in SYCL host mode," \
    "the flags of $FX_BUILD_DIR"
  python3 "$root/scripts/sycl_host_compile.py" "$compiler" "$FX_BUILD_DIR" "$kokkos" "$build" "${sources[@]}" 2>&1 |
    tee "$log" || { echo "$check: compile failed"; exit 1; }
  symbols=$(nm -C "$build/data-store/src/device_staging.cpp.o")
  grep -q "$stream" <<<"$symbols" ||
    { echo "$check: device_staging.cpp makes no sycl::queue of its own (no $stream)"; exit 1; }
  echo "$check: ${#sources[@]} sources compiled for sycl (host code) in $((SECONDS - start)) s"
  exit 0
fi
if [ "$backend" = cuda ]; then
  cxx=$kokkos/bin/nvcc_wrapper
  version=$(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
else
  cxx=hipcc
  version=$(hipcc --version 2>/dev/null | sed -n 's/^HIP version: //p')
  # hipcc asks rocm_agent_enumerator for the GPU when no arch is given; the
  # arch comes from Kokkos' target (KOKKOS_ARCH_AMD_GFX90A).
  export HIP_PLATFORM=amd
fi
echo "$check: fx with Kokkos $kokkos ($backend, $arch), $compiler $version"
# A unity build: the device compiler reads Kokkos' headers once per batch of
# sources, not once per source (nvcc, fx_framework built alternately: 75 s
# against 155 s). Each source on its own is compiled by the main build.
# -O0: a check that compiles, runs nothing (the host compiler's share:
# 289 s against 338 s at -O3; the device code is still optimised by ptxas).
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS=-O0 -DCMAKE_CXX_COMPILER="$cxx" -DKokkos_ROOT="$kokkos" \
  -DCMAKE_UNITY_BUILD=ON -DFX_BUILD_TESTS=OFF -DFX_BUILD_BENCH=ON -DFX_BUILD_MINIAPPS=ON >"$log" 2>&1 ||
  { tail -n 30 "$log"; echo "$check: configure failed (whole log: $log)"; exit 1; }
targets=(fx_framework fx_hdf5 device_bench stencil minife md)
cmake --build "$build" -j "${FX_JOBS:-$(nproc)}" --target "${targets[@]}" >>"$log" 2>&1 ||
  { grep -m 20 -A 5 "error" "$log" || tail -n 30 "$log"; echo "$check: compile failed (whole log: $log)"; exit 1; }
# The staging path's own instance must be a stream of its own: its symbol is in the store.
# (Read whole first: grep -q leaving early would fail nm's pipe under pipefail.)
symbols=$(nm -C "$build/data-store/libfx_data_store.a")
if ! grep -q "$stream" <<<"$symbols"; then
  echo "$check: libfx_data_store.a calls no $stream: the staging path has no stream of its own"
  exit 1
fi
echo "$check: ${targets[*]} compiled for $backend in $((SECONDS - start)) s"
