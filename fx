#!/usr/bin/env bash
# fx driver: set up, build, test, demo, run, bench, plot.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$root/scripts/env.sh"

usage() {
  cat <<'TXT'
usage: ./fx <command> [args]
  setup [--kokkos 4]    install Debian packages and Open MPI 5 (ULFM) into .venv;
                        --kokkos 4: also Kokkos 4.6.01 with OpenMP from ../shared/deps
                        (.deps/; then FX_KOKKOS=4 ./fx build|test uses it, in build-kokkos4/)
  build                 setup, then configure and build into build/
  test [ctest args]     build, then run the whole test suite in parallel
                        (FX_TEST_JOBS, default 8 per core; e.g. ./fx test -L ft)
  test quick [ctest args]   the unit tests and a few kill tests (label quick)
  test --sanitize address,undefined|thread [ctest args]
                        the same built with ASan+UBSan or TSan (docs/testing.md)
  demo                  build, run the stencil on 4+2 ranks with a kill, show the recovery
  demo-substrate        build, show raw ULFM detection and repair on 4+2 ranks
  run -n N [-s S] [-t SECONDS] [--hostfile FILE] [--supervise [--spare-hosts K]
      [--max-relaunches R] [--watchdog SECONDS]] program [args]
                        launch with ULFM: N active ranks plus S spares (over
                        several hosts; supervised: relaunched when hosts are lost)
  bench [names]         build, run the benchmarks, write YAML under bench/results/
  plot REPORT [PNG]     render a run report's timeline as a PNG
  docs [OUT_DIR]        the installed headers' API reference (Doxygen; build/docs/api)
  fuzz [TARGET|all] [SECONDS]   fuzz the readers (libFuzzer, clang; docs/testing.md)
  gpu-prepare KOKKOS_SOURCE | --build CUDA_BUILD
                        make .gpu/ for a GPU machine without network (docs/gpu.md)
  gpu-check [--quick] [--only|--skip STEPS] [--chaos N]
                        on a GPU machine: build Kokkos+CUDA and fx, run the GPU checks (docs/gpu.md)
TXT
}

jobs=${FX_JOBS:-$(nproc)}
do_build() {
  "$root/scripts/setup.sh"
  local kokkos=()
  [ "$FX_KOKKOS" = 4 ] && kokkos=(-DKokkos_ROOT="$("$root/scripts/kokkos4.sh")")
  case ${FX_UNITY:=OFF} in
    ON | OFF) ;;
    *) echo "fx build: FX_UNITY is '$FX_UNITY'; expected ON or OFF" >&2; exit 2 ;;
  esac
  if [ ! -f "$FX_BUILD_DIR/CMakeCache.txt" ]; then
    # FX_UNITY=ON: a unity build (CI's Kokkos 4 stage: 0.8x the time; each
    # source alone is compiled by the main build).
    cmake -S "$root" -B "$FX_BUILD_DIR" -DCMAKE_BUILD_TYPE="${FX_BUILD_TYPE:-Release}" \
      -DFX_WARNINGS_AS_ERRORS="${FX_WERROR:-${CI:+ON}}" -DCMAKE_UNITY_BUILD="$FX_UNITY" "${kokkos[@]}" >/dev/null
  fi
  cmake --build "$FX_BUILD_DIR" -j "$jobs"
}

cmd=${1:-help}; shift || true
case "$cmd" in
  setup)
    if [ "${1:-}" = --kokkos ]; then
      [ "${2:-}" = 4 ] || { echo "fx setup: --kokkos expects 4 (Kokkos 4.6.01 with OpenMP), got '${2:-}'" >&2; exit 2; }
      "$root/scripts/setup.sh"; "$root/scripts/kokkos4.sh" >/dev/null
    else
      "$root/scripts/setup.sh" "$@"
    fi ;;
  build) do_build ;;
  test)
    if [ "${1:-}" = --sanitize ]; then
      shift; "$root/scripts/setup.sh"; exec "$root/scripts/sanitize.sh" "$@"
    fi
    labels=()
    if [ "${1:-}" = quick ]; then
      shift; labels=(-L '^(unit|quick)$')
    fi
    do_build
    cd "$FX_BUILD_DIR"
    if [ "$FX_KOKKOS" = 4 ]; then
      # Many ranks with OMP_NUM_THREADS threads each on few cores: threads
      # that spin at a barrier take the core from the rank that would let
      # them go (e2e cases 8x slower); Kokkos' oversubscription warning is
      # then the tests' normal case.
      export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} KOKKOS_DISABLE_WARNINGS=${KOKKOS_DISABLE_WARNINGS:-1}
    fi
    # 8 tests per core (scripts/env.sh; docs/testing.md has the times).
    ctest --output-on-failure --timeout 600 -j "$fx_test_jobs" "${labels[@]}" "$@"
    ;;
  demo) do_build; exec "$root/scripts/demo_stencil.sh" "$@" ;;
  demo-substrate) do_build; exec "$root/scripts/demo.sh" "$@" ;;
  run) exec "$root/scripts/launch.sh" "$@" ;;
  bench) do_build; exec "$root/scripts/bench.sh" "$@" ;;
  plot) exec "$root/scripts/plot.sh" "$@" ;;
  docs) "$root/scripts/setup.sh"; exec "$root/scripts/api_docs.sh" "$@" ;;
  fuzz) exec "$root/scripts/fuzz.sh" "$@" ;;
  gpu-prepare) exec "$root/scripts/gpu_prepare.sh" "$@" ;;
  gpu-check) exec "$root/scripts/gpu_check.sh" "$@" ;;
  help|-h|--help) usage ;;
  *) echo "fx: unknown command '$cmd'" >&2; usage >&2; exit 2 ;;
esac
