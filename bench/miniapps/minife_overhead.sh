#!/usr/bin/env bash
# Issue 29 item 6: minife's fx app against its plain baseline, per CG
# iteration, at several shapes, runs alternated in one invocation (fx,
# baseline, fx, baseline, ...: a pair shares the machine's state). No
# spares, no checkpoints: the runtime's per-step cost alone. Per run: the
# median step-to-step interval (the driving loop's view: fx runtime vs a
# plain while loop) and the time in each kernel (matvec with its halo
# exchange as miniFE counts it, halo alone, dot with its reduction, waxpby).
#
#   bench/miniapps/minife_overhead.sh [-r PAIRS] [-o OUT.yaml] [-c PERCENT] [-t] [-u] [SHAPE...]
#
# SHAPE: `default:P` (the app's default problem on P ranks) or `N:P`
# (problem minife, N^3 elements, P ranks). Default: default:4 32:1 32:4
# 64:1 64:4, 5 pairs each. -c: exit 1 when a shape's overhead, taken on
# each run's fastest tenth of steps (the least disturbed by other jobs),
# exceeds PERCENT (a check, for ctest). -t: a pair's two runs at the same
# time, on disjoint cores (a machine with 2 P free cores or more): both then
# see the same machine state, which moved single runs by 30 % on a lent
# 16-core VM. Where the machine has a physical core for every rank of the
# runs going at once (P, or 2 P with -t), each run is pinned to its own
# cores, one logical CPU per physical core (fx launches with --bind-to
# none, so the kernel may move ranks between cores and onto one core's two
# threads; unpinned, the baseline's median step at 64^3 on 4 ranks ranged
# 1.4-2.6 ms over 8 runs on a 16-core VM); a pair's runs one after the
# other share their cores.
# With -t the two swap their cores every other pair. -u: never pin.
# FX_BUILD_DIR picks the build.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/scripts/env.sh"
pairs=5 out=$root/bench/results/minife_overhead.yaml check="" together=0 pin=1
while getopts "r:o:c:tu" opt; do
  case $opt in
    r) pairs=$OPTARG ;;
    o) out=$OPTARG ;;
    c) check=$OPTARG ;;
    t) together=1 ;;
    u) pin=0 ;;
    *) echo "usage: $0 [-r PAIRS] [-o OUT.yaml] [-c PERCENT] [-t] [-u] [default:P|N:P ...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
shapes=${*:-default:4 32:1 32:4 64:1 64:4}
source "$root/bench/miniapps/minife_shapes.sh"
declare -A exes=()
for variant in fx baseline; do exes[$variant]=$(minife_exe "$variant") || exit 1; done
work=$(mktemp -d "${TMPDIR:-/tmp}/fx-bench-minife-overhead.XXXXXX")
trap 'rm -rf "$work"' EXIT
samples=$work/samples   # lines: "<shape> <fx|baseline> <pair> <key> <value>"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# The CPUs this process may use, one per physical core (its first sibling).
read -r -a cores <<<"$(/usr/bin/python3 -c '
import os
seen, out = set(), []
for c in sorted(os.sched_getaffinity(0)):
    try:
        sib = open(f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list").read().strip()
    except OSError:
        sib = str(c)
    if sib not in seen:
        seen.add(sib)
        out.append(str(c))
print(" ".join(out))')"
# pinned VARIANT PAIR command...: the command on the CPUs cpus[VARIANT]
# names (set per shape below), or as it is where that is empty. With -t the
# two variants swap their cores every other pair (a core's own speed, or
# the interrupts it takes, counts on both sides).
declare -A cpus=()
pinned() {
  local set=${cpus[$1]}
  if [ "$together" = 1 ] && [ $(($2 % 2)) = 0 ]; then
    [ "$1" = fx ] && set=${cpus[baseline]} || set=${cpus[fx]}
  fi
  shift 2
  [ -n "$set" ] || { "$@"; return; }
  /usr/bin/python3 -c 'import os, sys
os.sched_setaffinity(0, [int(c) for c in sys.argv[1].split(",")])
os.execvp(sys.argv[2], sys.argv[2:])' "$set" "$@"
}

for shape in $shapes; do
  args=(--progress-every 0)
  minife_shape "$shape" args
  np=${shape##*:}
  cpus=([fx]="" [baseline]="")
  need=$((np * (together + 1)))
  if [ "$pin" = 1 ] && [ "$need" -le "${#cores[@]}" ]; then
    cpus[fx]=$(IFS=,; echo "${cores[*]:0:np}")
    cpus[baseline]=$(IFS=,; echo "${cores[*]:np*together:np}")
    echo "$shape: pinned, fx on CPUs ${cpus[fx]}, baseline on ${cpus[baseline]} (one per physical core$([ "$together" = 0 ] || echo '; swapped every other pair'))" >&2
    echo "$shape fx 0 pinned 1" >>"$samples"
  else
    echo "$shape: not pinned ($need ranks at once, ${#cores[@]} physical cores$([ "$pin" = 1 ] || echo ', -u'))" >&2
  fi
  for ((k = 1; k <= pairs; ++k)); do
    declare -A pid=() rc=()
    for variant in fx baseline; do
      FX_INJECT='' pinned "$variant" "$k" "$root/scripts/launch.sh" -n "$np" -s 0 -t 300 -- "${exes[$variant]}" "${args[@]}" \
        >"$work/out.$variant" 2>"$work/err.$variant" &
      pid[$variant]=$!
      [ "$together" = 1 ] || { wait "${pid[$variant]}"; rc[$variant]=$?; }
    done
    for variant in fx baseline; do
      [ "$together" = 0 ] || { wait "${pid[$variant]}"; rc[$variant]=$?; }
      [ "${rc[$variant]}" = 0 ] ||
        { tail -5 "$work/err.$variant" >&2; echo "bench: $variant $shape exited ${rc[$variant]}" >&2; exit 1; }
      awk -v s="$shape" -v v="$variant" -v k="$k" '/^(timing|result): /{print s, v, k, $2, $4}' "$work/out.$variant" >>"$samples"
    done
    echo "$shape pair $k: $(awk -v s="$shape" -v k="$k" '$1 == s && $3 == k && $4 == "iteration_median_s" {printf "%s %s s  ", $2, $5}' "$samples")" >&2
  done
done

# The summary goes through PyYAML (bench/common/bench_results.py).
PYTHONPATH=$root/bench/common${PYTHONPATH:+:$PYTHONPATH} /usr/bin/python3 - "$samples" "$out" "$pairs" "$load_before" "$check" "$together" <<'PY'
import sys, statistics, datetime, platform
import bench_results
samples, out, pairs, load_before, check, together = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
data = {}
for line in open(samples):
    shape, variant, _, key, value = line.split()
    try:
        data.setdefault(shape, {}).setdefault(variant, {}).setdefault(key, []).append(float(value))
    except ValueError:
        pass
med = statistics.median
rep = {"benchmark": "minife_overhead", "date": f"{datetime.datetime.utcnow():%Y-%m-%dT%H:%M:%SZ}",
       "host": platform.node(), "pairs": pairs, "order": "fx and baseline at the same time" if together == "1" else "fx, baseline, fx, baseline, ...",
       "spares": 0, "checkpoints": "off", "load_average_before": load_before}
rows = {}
for shape, d in data.items():
    fx, base = d["fx"], d["baseline"]
    n, np = shape.split(":")
    row = {"problem": "unit 20^3 (default)" if n == "default" else f"minife {n}^3", "ranks": int(np),
           "iterations": int(med(fx["iterations"])),
           "fx_iteration_s": round(med(fx["iteration_median_s"]), 7),
           "baseline_iteration_s": round(med(base["iteration_median_s"]), 7),
           "overhead_percent": round(100 * (med(fx["iteration_median_s"]) / med(base["iteration_median_s"]) - 1), 2),
           "pair_ratio": bench_results.paired_ratio(fx["iteration_median_s"], base["iteration_median_s"]),
           # the 10th percentile of each run's steps: less of the preemption by other jobs
           "overhead_percent_p10": round(100 * (med(fx["iteration_p10_s"]) / med(base["iteration_p10_s"]) - 1), 2),
           "target_percent": bench_results.target("<=", 2.0),
           "pinned": "pinned" in fx}
    row["met"] = row["overhead_percent"] <= 2.0
    # Seconds in each kernel over the solve, fx / baseline (medians).
    row["kernel_ratio"] = {k[:-2]: round(med(fx[k]) / med(base[k]), 3) for k in
                           ("matvec_s", "halo_s", "dot_s", "waxpby_s", "solve_s") if k in fx and k in base and med(base[k]) > 0}
    rows[shape] = row
rep["shapes"] = rows
rep["load_average_after"] = " ".join(open("/proc/loadavg").read().split()[:3])
bench_results.write(out, rep, "bench/miniapps/minife_overhead.sh: medians of alternated runs")
over = {s: r["overhead_percent_p10"] for s, r in rows.items() if check and r["overhead_percent_p10"] > float(check)}
if over:
    sys.exit(f"minife_overhead: fx / baseline per step above {check} %: {over}")
PY
