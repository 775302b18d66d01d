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
    FX_INJECT= FX_REPORT=$work/report.yaml "$root/fx" run -n "$np" -s 0 -t 300 "$exe" "${args[@]}" --abft "$abft" \
      >"$work/out" 2>"$work/err" || { cat "$work/err" >&2; echo "bench: run failed (abft $abft)" >&2; exit 1; }
    solve=$(sed -n 's/^timing: solve_s = //p' "$work/out")
    iters=$(sed -n 's/^result: iterations = //p' "$work/out")
    echo "$abft $solve $iters" >>"$work/samples"
    echo "run $k abft=$abft: solve ${solve} s, ${iters} iterations" >&2
  done
done

mkdir -p "$(dirname "$out")"
python3 - "$work/samples" "$out" "$np" "$reps" "${args[*]}" <<'PY'
import statistics, sys
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
text = (f"# bench/miniapps/minife_abft.sh: minife failure-free, abft off vs on, interleaved\n"
        f"ranks: {np}\nruns: {reps}\nargs: \"{args}\"\niterations: {'/'.join(sorted(iters))}\n"
        f"solve_s_abft_off: {off:.6f}\nsolve_s_abft_on: {on:.6f}\n"
        f"ratio_of_medians: {on / off:.3f}\nmedian_pair_ratio: {statistics.median(pairs):.3f}\n"
        f"pair_ratio_range: [{pairs[0]:.3f}, {pairs[-1]:.3f}]\n"
        f"samples_off: {runs['false']}\nsamples_on: {runs['true']}\n")
open(out, "w").write(text)
print(text, end="")
PY
