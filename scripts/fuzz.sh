#!/usr/bin/env bash
# ./fx fuzz [TARGET|all] [SECONDS]: build the fuzz targets with clang,
# libFuzzer, ASan and UBSan (build-fuzz/), then fuzz TARGET (default all,
# each its own process) for SECONDS (default 60). The repo's seeds
# (tests/fuzz/corpus/TARGET) are read, never written: new inputs go to
# build-fuzz/corpus/TARGET, crashes to build-fuzz/findings/TARGET/.
# ./fx fuzz merge TARGET adds to the seeds the working corpus's inputs that
# add coverage (libFuzzer's -merge=1; the seeds' own files stay).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=env.sh
source "$root/scripts/env.sh"
targets=(image manifest node_files config inject hostfile)
build=${FX_FUZZ_BUILD_DIR:-$root/build-fuzz}
seeds=$root/tests/fuzz/corpus

die() { echo "fx fuzz: $*" >&2; exit 2; }
known() { local t; for t in "${targets[@]}"; do [ "$t" = "$1" ] && return 0; done; return 1; }

build_targets() {
  if [ ! -f "$build/CMakeCache.txt" ]; then
    CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFX_FUZZ=ON \
      -DFX_SANITIZE=address,undefined -DFX_BUILD_MINIAPPS=OFF -DFX_BUILD_BENCH=OFF >/dev/null
  fi
  cmake --build "$build" -j "${FX_JOBS:-$(nproc)}" --target fuzz_image fuzz_manifest fuzz_node_files \
    fuzz_config fuzz_inject
}

# One target for `seconds`; its summary line on stdout at the end.
fuzz_one() {
  local t=$1 seconds=$2 work=$build/corpus/$1 out=$build/findings/$1 log=$build/findings/$1.log
  mkdir -p "$work" "$out"
  local flags=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024
               -max_len=16384 -print_final_stats=1 -artifact_prefix="$out/")
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  local rc=0
  if [ "$t" = hostfile ]; then
    FX_FUZZ_ATHERIS=1 "$FX_VENV/bin/python3" "$root/tests/fuzz/hostfile.py" "${flags[@]}" "$work" "$seeds/$t" \
      >"$log" 2>&1 || rc=$?
  else
    (cd "$out" && "$build/tests/fuzz/fuzz_$t" "${flags[@]}" "$work" "$seeds/$t") >"$log" 2>&1 || rc=$?
  fi
  local runs cov crashes
  runs=$(grep -oE "stat::number_of_executed_units: [0-9]+" "$log" | grep -oE "[0-9]+$" ||
         grep -oE "^#[0-9]+" "$log" | tail -1 | tr -d '#' || true)
  cov=$(grep -oE "cov: [0-9]+ ft: [0-9]+" "$log" | tail -1 || true)
  crashes=$(find "$out" -maxdepth 1 -type f \( -name "crash-*" -o -name "leak-*" -o -name "timeout-*" -o -name "oom-*" \) | wc -l)
  echo "fuzz $t: ${seconds}s, $runs executions, ${cov:-cov ?}, corpus $(find "$work" -type f | wc -l) inputs, $crashes finding(s), exit $rc (log $log)"
  [ "$rc" -eq 0 ] && [ "$crashes" -eq 0 ]
}

merge() {
  local t=$1
  known "$t" || die "merge: unknown target '$t' (one of: ${targets[*]})"
  [ "$t" != hostfile ] || die "merge: hostfile's seeds are edited by hand"
  local before; before=$(find "$seeds/$t" -type f | wc -l)
  # Into the seeds: their files stay (names such as finding_* too); only
  # working-corpus inputs that add coverage are added, under their hashes.
  "$build/tests/fuzz/fuzz_$t" -merge=1 "$seeds/$t" "$build/corpus/$t" >/dev/null 2>&1
  echo "fx fuzz: $seeds/$t holds $(find "$seeds/$t" -type f | wc -l) inputs ($before before)"
}

case "${1:-all}" in
  -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  merge) "$root/scripts/setup.sh" --fuzz; build_targets; merge "${2:-}"; exit 0 ;;
esac
which=${1:-all}; seconds=${2:-60}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -eq 0 ]; then
  die "SECONDS: expected a whole number > 0, got '$seconds'"
fi
if [ "$which" = all ]; then run=("${targets[@]}"); else known "$which" || die "unknown target '$which' (one of: all ${targets[*]})"; run=("$which"); fi
"$root/scripts/setup.sh" --fuzz
build_targets
echo "fx fuzz: ${run[*]} for ${seconds}s each, at the same time (findings under $build/findings)"
pids=()
for t in "${run[@]}"; do fuzz_one "$t" "$seconds" & pids+=($!); done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
exit $failed
