#!/usr/bin/env bash
# Failure-free cost of minife's ABFT TryBlock (app.abft): the same solve
# with abft off and on, runs interleaved (the machine is shared: compare
# the medians' ratio). Time = the app's own solve time (solve_s).
#
#   bench/miniapps/minife_abft.sh [-r REPS] [-n RANKS] [-o OUT.yaml] [-- MINIFE ARGS...]
#
# Default problem: 60^3 elements, tolerance 1e-10, 4 ranks, no spares, no
# checkpoints, 7 runs each. FX_BUILD_DIR picks the build. Writes
# bench/results/minife_abft.yaml (or OUT.yaml).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/scripts/env.sh"
reps=7 np=4 out=$root/bench/results/minife_abft.yaml
while getopts "r:n:o:" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    n) np=$OPTARG ;;
    o) out=$OPTARG ;;
    *) echo "usage: $0 [-r REPS] [-n RANKS] [-o OUT.yaml] [-- MINIFE ARGS...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--nx 60 --ny 60 --nz 60 --tolerance 1e-10)
exe=$FX_BUILD_DIR/miniapps/minife/minife
[ -x "$exe" ] || { echo "bench: $exe not built" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fx-bench-abft.XXXXXX")
trap 'rm -rf "$work"' EXIT

for ((k = 1; k <= reps; ++k)); do
  for abft in false true; do
    FX_INJECT='' FX_REPORT=$work/report.yaml "$root/fx" run -n "$np" -s 0 -t 300 "$exe" "${args[@]}" --abft "$abft" \
      >"$work/out" 2>"$work/err" || { cat "$work/err" >&2; echo "bench: run failed (abft $abft)" >&2; exit 1; }
    solve=$(sed -n 's/^timing: solve_s = //p' "$work/out")
    iters=$(sed -n 's/^result: iterations = //p' "$work/out")
    echo "$abft $solve $iters" >>"$work/samples"
    echo "run $k abft=$abft: solve ${solve} s, ${iters} iterations" >&2
  done
done

mkdir -p "$(dirname "$out")"
# The summary goes through PyYAML (bench/common/bench_results.py).
PYTHONPATH=$root/bench/common${PYTHONPATH:+:$PYTHONPATH} /usr/bin/python3 - "$work/samples" "$out" "$np" "$reps" "${args[*]}" <<'PY'
import statistics, sys
import bench_results
samples, out, np, reps, args = sys.argv[1:]
runs = {"false": [], "true": []}
iters = set()
for line in open(samples):
    abft, solve, it = line.split()
    runs[abft].append(float(solve))
    iters.add(it)
off, on = statistics.median(runs["false"]), statistics.median(runs["true"])
# Ratio of each interleaved pair: less sensitive to load drifting over the run.
pairs = sorted(b / a for a, b in zip(runs["false"], runs["true"]))
bench_results.write(out, {
    "ranks": int(np), "runs": int(reps), "args": args, "iterations": int(min(iters)) if len(iters) == 1 else "/".join(sorted(iters)),
    "solve_s_abft_off": round(off, 6), "solve_s_abft_on": round(on, 6),
    "ratio_of_medians": round(on / off, 3), "median_pair_ratio": round(statistics.median(pairs), 3),
    "pair_ratio_range": [round(pairs[0], 3), round(pairs[-1], 3)],
    "samples_off": runs["false"], "samples_on": runs["true"],
}, "bench/miniapps/minife_abft.sh: minife failure-free, abft off vs on, interleaved")
PY
