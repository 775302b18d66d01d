#!/usr/bin/env bash
# Run the benchmarks; each writes YAML under bench/results/.
#
#   scripts/bench.sh [name...]        (./fx bench [name...]; default: all)
#
# Benchmarks are listed in bench/*/benchmarks.txt, one launch configuration
# a line:   name  np  spares  runs  exe-in-build-dir  [args...]
# Every run goes through scripts/launch.sh (-n np -s spares) with
#   FX_BENCH_DIR   the results directory (bench/results, or $FX_BENCH_RESULTS)
#   FX_BENCH_NAME  the entry's name
#   FX_BENCH_RUN   1..runs, FX_BENCH_RUNS runs
# and the program writes $FX_BENCH_DIR/<name>.yaml itself (a program that
# needs several launches for a median keeps raw data between runs and
# summarises on the last). Launcher codes 0 and 3 (survived failures) pass.
# FX_BENCH_TIMEOUT (s, default 120) bounds each launch.
#
# A driver script that launches several variants itself (to compare them in
# one invocation) is listed as:   name  script  -  -  path-in-repo  [args...]
# and is run as `path BUILD_DIR bench/results/<name>.yaml [args...]`.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/env.sh"
results=${FX_BENCH_RESULTS:-$root/bench/results}
mkdir -p "$results"
want=("$@")

selected() {
  [ ${#want[@]} -eq 0 ] && return 0
  local w; for w in "${want[@]}"; do [ "$w" = "$1" ] && return 0; done
  return 1
}

failed=0; ran=0
shopt -s nullglob
for list in "$root"/bench/*/benchmarks.txt; do
  while read -r name np spares runs exe args; do
    case "$name" in ''|\#*) continue ;; esac
    selected "$name" || continue
    if [ "$np" = "script" ]; then
      echo "fx bench: $name: $exe $args"
      # shellcheck disable=SC2086
      # No stdin: the list is the loop's, and a driver's ssh would eat the
      # entries after it.
      if ! "$root/$exe" "$FX_BUILD_DIR" "$results/$name.yaml" $args </dev/null; then
        echo "fx bench: $name failed" >&2; failed=1
      fi
      ran=$((ran + 1)); continue
    fi
    prog="$FX_BUILD_DIR/$exe"
    if [ ! -x "$prog" ]; then
      echo "fx bench: $name: $prog is not built (see $list)" >&2; failed=1; continue
    fi
    echo "fx bench: $name at $np+$spares, $runs run(s): $exe $args"
    for run in $(seq "$runs"); do
      # shellcheck disable=SC2086  # args are whitespace-separated words
      FX_BENCH_DIR=$results FX_BENCH_NAME=$name FX_BENCH_RUN=$run FX_BENCH_RUNS=$runs \
        "$root/scripts/launch.sh" -n "$np" -s "$spares" -t "${FX_BENCH_TIMEOUT:-120}" -- "$prog" $args </dev/null
      rc=$?
      if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
        echo "fx bench: $name run $run/$runs at $np+$spares failed with launcher code $rc" >&2
        failed=1
      fi
      ran=$((ran + 1))
    done
  done < "$list"
done
if [ "$ran" -eq 0 ]; then
  echo "fx bench: no benchmark matched '${want[*]:-}' in bench/*/benchmarks.txt" >&2
  exit 2
fi
echo "fx bench: results in $results"
exit "$failed"
