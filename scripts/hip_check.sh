#!/usr/bin/env bash
# The HIP compile check (./fx test's hip_compile; issue 43): Kokkos 4.6.01
# with its HIP backend (scripts/kokkos4.sh, FX_KOKKOS4_BACKEND=hip), then
# fx compiled by hipcc against it for an AMD MI200 (gfx90a): the library
# with the data store's device staging on a HIP stream of its own, the
# device benchmark and the three mini-apps. Compiling needs no AMD GPU; nothing
# runs. Exit 77 (ctest: skipped) with one line when hipcc is not there
# (Debian: apt install hipcc).
#
#   scripts/hip_check.sh [BUILD_DIR]   (default build-hip)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-hip}
if ! command -v hipcc >/dev/null; then
  echo "hip_check: skipped: no hipcc on this machine (Debian: apt install hipcc)"
  exit 77
fi
# shellcheck source=scripts/env.sh
source "$root/scripts/env.sh"  # the venv's Open MPI (ULFM)
start=$SECONDS
kokkos=$(FX_KOKKOS4_BACKEND=hip "$root/scripts/kokkos4.sh")
log=$build/hip_check.log
mkdir -p "$build"
echo "hip_check: fx with Kokkos $kokkos (HIP, gfx90a), hipcc $(hipcc --version 2>/dev/null | sed -n 's/^HIP version: //p')"
# hipcc asks rocm_agent_enumerator for the GPU when no arch is given; the
# arch comes from Kokkos' target (KOKKOS_ARCH_AMD_GFX90A).
export HIP_PLATFORM=amd
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=hipcc -DKokkos_ROOT="$kokkos" \
  -DFX_BUILD_TESTS=OFF -DFX_BUILD_BENCH=ON -DFX_BUILD_MINIAPPS=ON >"$log" 2>&1 ||
  { tail -n 30 "$log"; echo "hip_check: configure failed (whole log: $log)"; exit 1; }
targets=(fx_framework fx_hdf5 device_bench stencil minife md)
cmake --build "$build" -j "${FX_JOBS:-$(nproc)}" --target "${targets[@]}" >>"$log" 2>&1 ||
  { grep -m 20 -A 5 "error" "$log" || tail -n 30 "$log"; echo "hip_check: compile failed (whole log: $log)"; exit 1; }
# The staging path's own instance must be a HIP stream: its symbol is in the store.
symbols=$(nm -C "$build/data-store/libfx_data_store.a")
if ! grep -q "hipStreamCreateWithFlags" <<<"$symbols"; then
  echo "hip_check: libfx_data_store.a calls no hipStreamCreateWithFlags: the staging path has no stream of its own"
  exit 1
fi
echo "hip_check: ${targets[*]} compiled for HIP in $((SECONDS - start)) s"
