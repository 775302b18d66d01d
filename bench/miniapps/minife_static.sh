#!/usr/bin/env bash
# Issue 15 item 16: minife's kill -> resume with the matrix recomputed by
# the recruited spare (app.static_matrix: false) and received from the
# buddy as static store members (true), runs alternated in one invocation.
# Kill of logical rank 2 at iteration 45, checkpoint every 10, 4 active +
# 1 spare, figures from the fx report's recovery record (kill -> first step
# after the repair). Also the per-rank peak RSS (VmHWM) of failure-free
# runs of problem: minife, with and without static members.
#
#   bench/miniapps/minife_static.sh [-r REPS] [-n ELEMENTS] [-o OUT.yaml]
#
# Default 64^3 elements, 5 runs each. FX_BUILD_DIR picks the build.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/scripts/env.sh"
reps=5 n=64 out=$root/bench/results/minife_static.yaml
while getopts "r:n:o:" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    n) n=$OPTARG ;;
    o) out=$OPTARG ;;
    *) echo "usage: $0 [-r REPS] [-n ELEMENTS] [-o OUT.yaml]" >&2; exit 2 ;;
  esac
done
exe=$FX_BUILD_DIR/miniapps/minife/minife
[ -x "$exe" ] || { echo "bench: $exe not built" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fx-bench-static.XXXXXX")
trap 'rm -rf "$work"' EXIT
size=(--nx "$n" --ny "$n" --nz "$n" --progress-every 0)

for ((k = 1; k <= reps; ++k)); do
  for static in false true; do
    FX_INJECT=2@45 FX_REPORT=$work/report.yaml "$root/scripts/launch.sh" -n 4 -s 1 -t 300 -- "$exe" "${size[@]}" \
      --max-iterations 60 --static-matrix "$static" --fx-set checkpoint.memory.every=10 >"$work/out" 2>"$work/err"
    rc=$?
    [ "$rc" -eq 3 ] || { tail -5 "$work/err" >&2; echo "bench: kill run exited $rc (static $static)" >&2; exit 1; }
    total=$(awk '/^recoveries:/{r=1} r && /^ +total: /{print $2; exit}' "$work/report.yaml")
    restore=$(awk '/^recoveries:/{r=1} r && /^ +restore: /{print $2; exit}' "$work/report.yaml")
    echo "recovery $static $total $restore" >>"$work/samples"
    echo "run $k static_matrix=$static: kill -> resume ${total} s (restore ${restore} s)" >&2
  done
  for static in false true; do
    FX_INJECT='' "$root/scripts/launch.sh" -n 4 -s 0 -t 300 -- "$exe" "${size[@]}" --problem minife \
      --max-iterations 20 --verify-solution false --static-matrix "$static" \
      --fx-set checkpoint.memory.every=10 >"$work/out" 2>"$work/err" || { tail -5 "$work/err" >&2; exit 1; }
    echo "rss $static $(sed -n 's/^timing: peak_rss_max_kb = //p' "$work/out")" >>"$work/samples"
  done
done

# The summary goes through PyYAML (bench/common/bench_results.py).
PYTHONPATH=$root/bench/common${PYTHONPATH:+:$PYTHONPATH} /usr/bin/python3 - "$work/samples" "$out" "$n" "$reps" <<'PY'
import sys, statistics, datetime
import bench_results
samples, out, n, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rec, rss = {"false": [], "true": []}, {"false": [], "true": []}
for line in open(samples):
    f = line.split()
    if f[0] == "recovery":
        rec[f[1]].append((float(f[2]), float(f[3])))
    else:
        rss[f[1]].append(float(f[2]))
med = statistics.median
load = float(open("/proc/loadavg").read().split()[0])
rep = {"benchmark": "minife_static", "date": f"{datetime.datetime.utcnow():%Y-%m-%dT%H:%M:%SZ}",
       "elements": n, "ranks": 4, "spares": 1, "repetitions": reps}
for key, name in (("false", "recompute"), ("true", "static_members")):
    t = [x[0] for x in rec[key]]
    r = [x[1] for x in rec[key]]
    rep[name] = {"kill_to_resume_s": round(med(t), 4), "restore_s": round(med(r), 4),
                 "samples_s": [round(x, 4) for x in t],
                 "peak_rss_max_kb_problem_minife": round(med(rss[key]))}
rep["target_kill_to_resume_s"] = bench_results.target("<=", 0.05)
rep["load_average_at_end"] = load
bench_results.write(out, rep, "bench/miniapps/minife_static.sh: medians, runs alternated")
PY
