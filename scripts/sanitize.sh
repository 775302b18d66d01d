#!/usr/bin/env bash
# ./fx test --sanitize address,undefined|thread [ctest args]: the suite
# built with the sanitizers (build-asan/ or build-tsan/, same tree), run
# with every process's reports written to a log directory; any report
# fails the run, whatever the test's own verdict (a rank's report at exit
# would otherwise hide behind an expected exit code). Without ctest
# arguments: ASan+UBSan runs the unit, mpi and ft labels (not multihost);
# TSan runs the tests whose threads meet: the asynchronous commit's copier
# and exchange threads (forced on: checkpoint.memory.copier=thread,
# progress=thread) and the repair deadline.
# With --ci (the stage .ci/run runs): ASan+UBSan runs the data store's and
# the runtime's kill tests and the fuzz corpus replays, TSan the
# asynchronous-commit tests; only the targets those tests run are built.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=env.sh
source "$root/scripts/env.sh"
supp=$root/scripts/sanitizers

which=${1:-}; shift || true
case "$which" in
  address,undefined|undefined,address) which=address,undefined; build=$root/build-asan
    default=(-L "^(unit|mpi|ft)$" -LE "^(multihost|style)$")
    ci_rules=("^ft$:^(data_store|runtime)_" "^fuzz$:") ;;
  thread) build=$root/build-tsan
    default=(-R "async|^data_store_ft_|^runtime_kill|^tryblock_|^reinit_(one|two)_kill" -LE "^(multihost|style)$")
    ci_rules=(".:async")
    export FX_CFG_CHECKPOINT__MEMORY__COPIER=thread FX_CFG_CHECKPOINT__MEMORY__PROGRESS=thread
    # PMIx's gds/shmem2 maps its segment at a fixed address that TSan's
    # shadow memory holds: every rank aborted in MPI_Init. Its hash store instead.
    export PMIX_MCA_gds=hash
    # UCX (loaded by Open MPI's ucx components) hooks madvise, which glibc
    # calls on a thread's stack as the thread exits, after TSan let go of
    # it: every survivor died of SIGSEGV when the repair deadline's thread ended.
    export UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_MALLOC_HOOKS=no ;;
  *) echo "fx test --sanitize: expected address,undefined or thread, got '$which'" >&2; exit 2 ;;
esac

if [ ! -f "$build/CMakeCache.txt" ]; then
  # -O1 -g1: what the sanitizers' documentation advises, and line tables are
  # all a report's frames need; the build takes about 0.6x -O2 -g's time.
  # A unity build, as the Kokkos 4 stage's (each source alone: the main build).
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DFX_SANITIZE="$which" -DFX_BUILD_BENCH=OFF -DCMAKE_UNITY_BUILD=ON \
    -DFX_WARNINGS_AS_ERRORS="${FX_WERROR:-${CI:+ON}}" >/dev/null
fi
targets=()
if [ "${1:-}" = --ci ]; then
  shift
  [ $# -eq 0 ] || { echo "fx test --sanitize $which --ci: takes no ctest arguments, got '$*'" >&2; exit 2; }
  cmake "$build" >/dev/null  # the test list of this checkout
  read -ra targets < <("$root/scripts/ctest_select.py" "$build" targets "${ci_rules[@]}")
  set -- -I "$("$root/scripts/ctest_select.py" "$build" tests "${ci_rules[@]}")"
  echo "fx test --sanitize $which --ci: building ${targets[*]}"
fi
[ $# -gt 0 ] || set -- "${default[@]}"
start=$SECONDS
cmake --build "$build" -j "${FX_JOBS:-$(nproc)}" ${targets[@]+--target "${targets[@]}"}
echo "fx test --sanitize $which: built in $((SECONDS - start)) s"

export FX_SANITIZED=$which  # tests that compare memory use skip that check
logs=$build/sanitizer-logs
rm -rf "$logs" && mkdir -p "$logs"
common="log_path=$logs/report:print_suppressions=0"
export ASAN_OPTIONS="$common:detect_leaks=1:abort_on_error=0:exitcode=86"
export LSAN_OPTIONS="$common:suppressions=$supp/lsan.supp"
export UBSAN_OPTIONS="$common:print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
export TSAN_OPTIONS="$common:halt_on_error=0:exitcode=86:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
echo "fx test --sanitize $which: ctest $* (reports: $logs)"
rc=0
# Sanitized ranks mostly wait as the plain ones do: 8 tests per core, as
# ./fx test (the ASan+UBSan stage at -j16 on 2 cores: 187 s, the cores 73 %
# busy; at -j8: 309 s, 42 %).
(cd "$build" && ctest --output-on-failure --timeout 900 -j "$fx_test_jobs" "$@") || rc=$?
reports=$(find "$logs" -type f | sort)
if [ -n "$reports" ]; then
  echo "fx test --sanitize $which: $(echo "$reports" | wc -l) report file(s):" >&2
  for f in $reports; do echo "== $f" >&2; head -n 60 "$f" >&2; done
  exit 1
fi
echo "fx test --sanitize $which: no sanitizer report (ctest exit $rc)"
exit "$rc"
