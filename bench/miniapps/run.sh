#!/usr/bin/env bash
# Mini-app benchmarks, all measured in this one run (timings on a shared
# 2-core machine are noisy: compare ratios, read medians):
#
#   overhead   fx app (4 ranks, no spares, no checkpoints) vs its plain
#              MPI + Kokkos baseline, runs interleaved; time = the app's
#              own solve time (from initialize to the end of the loop)
#   bandwidth  stencil effective sweep bandwidth vs a STREAM-like copy of
#              the same per-rank size on the same 4 ranks
#   recovery   4 active + 2 spares, one SIGKILL, buddy restore: the extra
#              wall time beyond recomputing the lost iterations, for the
#              stencil with 64 MiB of state per rank, and for minife (the
#              median over the runs, and its 90 % bootstrap interval)
#   async      the stencil (64 MiB per rank, 4 ranks, a checkpoint every
#              10 sweeps) with checkpoint.memory.async on and off, runs
#              interleaved: solve time, and per checkpoint the app's wait
#              in the commit, its time on it after, the time to committed.
#              -a PAIRS of runs (default: REPS): one run's solve time moves
#              by up to 10 % here, and the ratio of 5 pairs' medians moved
#              between 0.98 and 1.06; the summary also gives the median of
#              the per-pair ratios and its 90 % bootstrap interval
#
#   md         LAMMPS in.lj (32,000 atoms, 200 steps) on 4 ranks
#              (FX_BENCH_MD_RANKS; FX_BENCH_MD_STEPS): md with a
#              checkpoint every 20 steps (its atoms fx::resizable) against
#              md_baseline, runs interleaved: loop time and peak memory per
#              pair; then 4+2 with a kill of rank 2 at step 50 (the
#              checkpoint of 40 restored): kill -> first resumed step
#
#   bench/miniapps/run.sh [BUILD_DIR OUT.yaml] [-r REPS] [-a PAIRS] [-o OUT.yaml] [overhead|bandwidth|recovery|async|md ...]
#
# `./fx bench miniapps` runs it (bench/miniapps/benchmarks.txt) with the
# build directory and bench/results/miniapps.yaml. Otherwise it writes
# bench/results/miniapps.yaml (or OUT.yaml) and FX_BUILD_DIR picks the build.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/scripts/env.sh"
launch=$root/scripts/launch.sh
reps=5
async_pairs=""
out=$root/bench/results/miniapps.yaml
if [ $# -ge 2 ] && [ -d "$1" ] && [[ "$2" != -* ]]; then
  FX_BUILD_DIR=$(cd "$1" && pwd)
  out=$2
  shift 2
fi
while getopts "r:a:o:" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    a) async_pairs=$OPTARG ;;
    o) out=$OPTARG ;;
    *) echo "usage: $0 [-r REPS] [-a PAIRS] [-o OUT.yaml] [overhead|bandwidth|recovery|async|md ...]" >&2; exit 2 ;;
  esac
done
async_pairs=${async_pairs:-$reps}
shift $((OPTIND - 1))
parts=${*:-overhead bandwidth recovery async md}
bin=$FX_BUILD_DIR/miniapps
for exe in stencil/stencil stencil/stencil_baseline minife/minife minife/minife_baseline md/md md/md_baseline; do
  [ -x "$bin/$exe" ] || { echo "bench: $bin/$exe not built" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/fx-bench-miniapps.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$(dirname "$out")"
samples=$work/samples.txt   # lines: "<group> <key> <value>"
: >"$samples"

# run <group> <np> <spares> <env...> -- <program args...>: one launch; its
# result/timing lines and report land in $samples.
run() {
  local group=$1 np=$2 spares=$3
  shift 3
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local t0 t1 rc
  t0=$(date +%s.%N)
  env "${envs[@]}" FX_REPORT="$work/report.yaml" "$launch" -n "$np" -s "$spares" -t 300 -- "$@" \
    >"$work/out.txt" 2>"$work/err.txt"
  rc=$?
  t1=$(date +%s.%N)
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
    echo "bench: '$*' exited with $rc" >&2
    tail -5 "$work/err.txt" >&2
    return 1
  fi
  awk -v g="$group" '/^(result|timing): /{print g, $2, $4}' "$work/out.txt" >>"$samples"
  echo "$group launch_s $(awk "BEGIN{print $t1 - $t0}")" >>"$samples"
  if [ -f "$work/report.yaml" ]; then
    # The fx report's recovery record: kill -> first step after the repair.
    # (No YAML module needed: the keys are unique enough to grep.)
    awk -v g="$group" '
      /^recoveries:/ {rec = 1; next}
      /^[a-z_]+:/ {rec = 0}
      rec && /restored_iteration:/ {print g, "restored_iteration", $2}
      rec && /^ +(detect|shrink|agree|rebuild|restore|total): / {k = $1; sub(":", "", k); print g, "recovery_" k "_s", $2}
      /^checkpoints:/ {ck = 1; next}
      /^[a-z_]+:/ {ck = 0}
      ck && match($0, / seconds: [0-9.e-]+/) {print g, "ckpt_wait_s", substr($0, RSTART + 10, RLENGTH - 10)}
      ck && match($0, /committed_s: [0-9.e-]+/) {print g, "ckpt_committed_s", substr($0, RSTART + 13, RLENGTH - 13)}
      ck && match($0, /background_s: [0-9.e-]+/) {print g, "ckpt_after_s", substr($0, RSTART + 14, RLENGTH - 14)}
    ' "$work/report.yaml" >>"$samples"
    rm -f "$work/report.yaml"
  fi
  echo "  $group: rc $rc, $(grep -E '^timing: (solve|bandwidth)' "$work/out.txt" | tr '\n' ' ')"
}

# 400 sweeps (about 1.3 s): shorter solves left the ratio inside the noise.
stencil_small=(--nx 160 --ny 160 --nz 160 --iterations 400 --progress-every 0)
minife_small=(--nx 48 --ny 48 --nz 48 --tolerance 1e-10 --progress-every 0)

if [[ " $parts " == *" overhead "* ]]; then
  echo "overhead: $reps interleaved pairs per app, 4 ranks, no spares, no checkpoints"
  for ((i = 0; i < reps; ++i)); do
    run stencil_baseline 4 0 FX_BENCH=1 -- "$bin/stencil/stencil_baseline" "${stencil_small[@]}"
    run stencil_fx 4 0 FX_BENCH=1 -- "$bin/stencil/stencil" "${stencil_small[@]}"
    run minife_baseline 4 0 FX_BENCH=1 -- "$bin/minife/minife_baseline" "${minife_small[@]}"
    run minife_fx 4 0 FX_BENCH=1 -- "$bin/minife/minife" "${minife_small[@]}"
  done
fi

if [[ " $parts " == *" bandwidth "* ]]; then
  # Out of cache: 320^3 over 2x2x1 ranks, 162x162x322 doubles per field and
  # rank, against a copy of arrays of that size.
  field_mib=$(awk 'BEGIN{print 162*162*322*8/1048576}')
  echo "bandwidth: stencil 320^3 vs a STREAM-like copy of $field_mib MiB per rank and array, 4 ranks"
  for ((i = 0; i < reps; ++i)); do
    run stencil_bw 4 0 FX_BENCH=1 -- "$bin/stencil/stencil_baseline" --nx 320 --ny 320 --nz 320 \
      --iterations 20 --progress-every 0
    run stream 4 0 FX_BENCH=1 -- "$FX_BUILD_DIR/bench/miniapps/bench_stream_copy" --mib "$field_mib" --reps 10
  done
fi

if [[ " $parts " == *" recovery "* ]]; then
  # 320^3 over 2x2x1 ranks: 162x162x322 doubles = 64.5 MiB of field per rank.
  big=(--nx 320 --ny 320 --nz 320 --iterations 30 --residual-every 10 --progress-every 0)
  fxset=(--fx-set checkpoint.memory.every=10)
  echo "recovery: stencil 4+2 ranks, 64 MiB per rank, checkpoint every 10, kill of rank 2 at iteration 25"
  for ((i = 0; i < reps; ++i)); do
    run stencil_recovery_ref 4 2 FX_BENCH=1 -- "$bin/stencil/stencil" "${big[@]}" "${fxset[@]}"
    run stencil_recovery_kill 4 2 FX_INJECT=2@25 -- "$bin/stencil/stencil" "${big[@]}" "${fxset[@]}"
  done
  mf=(--nx 48 --ny 48 --nz 48 --tolerance 1e-10 --progress-every 0 --fx-set checkpoint.memory.every=10)
  echo "recovery: minife 4+2 ranks, checkpoint every 10, kill of rank 2 at iteration 45"
  for ((i = 0; i < reps; ++i)); do
    run minife_recovery_ref 4 2 FX_BENCH=1 -- "$bin/minife/minife" "${mf[@]}"
    run minife_recovery_kill 4 2 FX_INJECT=2@45 -- "$bin/minife/minife" "${mf[@]}"
  done
fi

if [[ " $parts " == *" async "* ]]; then
  big=(--nx 320 --ny 320 --nz 320 --iterations 60 --residual-every 10 --progress-every 0
    --fx-set checkpoint.memory.every=10)
  echo "async: stencil 4 ranks, 64 MiB per rank, checkpoint every 10, async on/off interleaved, $async_pairs pairs"
  for ((i = 0; i < async_pairs; ++i)); do
    run stencil_async 4 0 FX_BENCH=1 -- "$bin/stencil/stencil" "${big[@]}" --fx-set checkpoint.memory.async=true
    run stencil_sync 4 0 FX_BENCH=1 -- "$bin/stencil/stencil" "${big[@]}" --fx-set checkpoint.memory.async=false
  done
fi

if [[ " $parts " == *" md "* ]]; then
  md=(--steps "${FX_BENCH_MD_STEPS:-200}" --thermo-every 1000)
  md_np=${FX_BENCH_MD_RANKS:-4}  # 2: a core per rank on this machine
  echo "md: in.lj, $md_np ranks, fx with a checkpoint every 20 steps vs the baseline, $reps interleaved pairs"
  for ((i = 0; i < reps; ++i)); do
    run md_baseline "$md_np" 0 FX_BENCH=1 -- "$bin/md/md_baseline" "${md[@]}"
    run md_fx "$md_np" 0 FX_BENCH=1 -- "$bin/md/md" "${md[@]}" --fx-set checkpoint.memory.every=20
  done
  echo "md: 4+2 ranks, checkpoint every 20 steps, kill of rank 2 at step 50"
  for ((i = 0; i < reps; ++i)); do
    run md_recovery_kill 4 2 FX_INJECT=2@50 -- "$bin/md/md" "${md[@]}" --fx-set checkpoint.memory.every=20
  done
fi

# The summary goes through PyYAML (bench/common/bench_results.py).
PYTHONPATH=$root/bench/common${PYTHONPATH:+:$PYTHONPATH} /usr/bin/python3 - "$samples" "$out" "$reps" <<'PY'
import os, sys, statistics, datetime, platform
import bench_results
samples, out, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = {}
for line in open(samples):
    g, k, v = line.split()
    try:
        data.setdefault(g, {}).setdefault(k, []).append(float(v))
    except ValueError:
        pass
med = lambda g, k: statistics.median(data[g][k]) if g in data and k in data[g] else None
rep = {"benchmark": "miniapps", "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
       "host": platform.node(), "repetitions": reps, "statistic": "median"}
rows = {}
for app in ("stencil", "minife"):
    b, f = med(app + "_baseline", "solve_s"), med(app + "_fx", "solve_s")
    if b and f:
        bmin, fmin = min(data[app + "_baseline"]["solve_s"]), min(data[app + "_fx"]["solve_s"])
        bi, fi = med(app + "_baseline", "iteration_median_s"), med(app + "_fx", "iteration_median_s")
        bp, fp = med(app + "_baseline", "iteration_p10_s"), med(app + "_fx", "iteration_p10_s")
        rows[app] = {"ranks": 4,
                     # per-iteration wall time as the driving loop sees it (baseline
                     # loop vs fx runtime): robust to the machine's other jobs
                     "baseline_iteration_s": round(bi, 6), "fx_iteration_s": round(fi, 6),
                     "overhead_percent": round(100 * (fi / bi - 1), 2),
                     "overhead_percent_p10": round(100 * (fp / bp - 1), 2),
                     "target_percent": bench_results.target("<=", 2.0),
                     # whole solve times: median and best of N (noisy here)
                     "baseline_solve_s": round(b, 6), "fx_solve_s": round(f, 6),
                     "solve_overhead_percent": round(100 * (f / b - 1), 2),
                     "solve_overhead_percent_best": round(100 * (fmin / bmin - 1), 2),
                     "baseline_samples": data[app + "_baseline"]["solve_s"], "fx_samples": data[app + "_fx"]["solve_s"]}
if rows:
    rep["overhead"] = rows
s, c = med("stencil_bw", "bandwidth_gbs"), med("stream", "copy_gbs")
if s and c:
    rep["bandwidth"] = {"ranks": 4, "stencil_effective_gbs": round(s, 3), "stream_copy_gbs": round(c, 3),
                        "stream_copy_best_gbs": round(med("stream", "copy_gbs_best"), 3),
                        "stencil_fraction_of_copy": round(s / c, 3),
                        "state_mib_per_rank_and_array": round(162 * 162 * 322 * 8 / 2**20, 1),
                        "note": "stencil: 16 B per point and sweep (one read, one write), halo and residual included"}
rec = {}
for app, kill_at in (("stencil", 25), ("minife", 45)):
    ref, kill = app + "_recovery_ref", app + "_recovery_kill"
    if ref not in data or kill not in data:
        continue
    iters = med(ref, "iterations")
    t_iter = med(ref, "compute_s") / iters if "compute_s" in data[ref] else med(ref, "solve_s") / iters
    lost = kill_at - med(kill, "restored_iteration")
    total = med(kill, "recovery_total_s")
    wall_extra = med(kill, "solve_s") - med(ref, "solve_s") - lost * t_iter
    limit = 0.05 if app == "stencil" else 0.1  # issue 17: <= 50 ms for the stencil's 64.5 MiB per rank
    rec[app] = {"active": 4, "spares": 2, "lost_iterations": int(lost), "iteration_s": round(t_iter, 6),
                # kill -> first step completed after the repair, minus that step
                "extra_s": round(total - t_iter, 4), "target_extra_s": bench_results.target("<=", limit),
                "extra_s_per_run": bench_results.median_interval([t - t_iter for t in data[kill]["recovery_total_s"]]),
                "met": total - t_iter <= limit,
                "fx_recovery_total_s": round(total, 4),
                "fx_detect_s": round(med(kill, "recovery_detect_s"), 4),
                "fx_shrink_s": round(med(kill, "recovery_shrink_s"), 4),
                "fx_restore_s": round(med(kill, "recovery_restore_s"), 4),
                # the same from whole-run times: includes checkpoint-time noise
                "wall_extra_s": round(wall_extra, 4),
                "ref_solve_s": round(med(ref, "solve_s"), 4), "kill_solve_s": round(med(kill, "solve_s"), 4),
                "answers_match": all(data[ref][k] == data[kill][k] for k in data[ref]
                                     if k in ("iterations", "l2_norm", "solution_norm") and k in data[kill])}
    if app == "stencil":
        rec[app]["state_mib_per_rank"] = round(162 * 162 * 322 * 8 / 2**20, 1)
if rec:
    rep["recovery"] = rec
if "stencil_async" in data and "stencil_sync" in data:
    a, s = "stencil_async", "stencil_sync"
    rep["async"] = {"ranks": 4, "state_mib_per_rank": round(162 * 162 * 322 * 8 / 2**20, 1),
                    "checkpoint_every": 10, "iterations": 60,
                    "async_solve_s": round(med(a, "solve_s"), 4), "sync_solve_s": round(med(s, "solve_s"), 4),
                    "solve_ratio": round(med(a, "solve_s") / med(s, "solve_s"), 3),
                    "solve_ratio_per_pair": bench_results.paired_ratio(data[a]["solve_s"], data[s]["solve_s"]),
                    "target_solve_ratio": bench_results.target("<=", 1.0),
                    # per checkpoint, medians over every checkpoint of every run (rank 0's report)
                    "async_commit_wait_s": round(med(a, "ckpt_wait_s"), 5),
                    "async_after_commit_s": round(med(a, "ckpt_after_s"), 5),
                    "async_committed_after_s": round(med(a, "ckpt_committed_s"), 5),
                    "sync_commit_s": round(med(s, "ckpt_wait_s"), 5),
                    "commit_wait_ratio": round(med(a, "ckpt_wait_s") / med(s, "ckpt_wait_s"), 4),
                    "target_commit_wait_ratio": bench_results.target("<=", 0.3)}
if "md_baseline" in data and "md_fx" in data:
    b, f = data["md_baseline"], data["md_fx"]
    loop = bench_results.paired_ratio(f["loop_s"], b["loop_s"])
    rss = bench_results.paired_ratio(f["peak_rss_max_kb"], b["peak_rss_max_kb"])
    md = {"ranks": int(os.environ.get("FX_BENCH_MD_RANKS", "4")), "atoms": int(med("md_fx", "atoms")),
          "steps": int(med("md_fx", "steps")),
          "checkpoint_every": 20,
          # the loop from initialize() to the end, commits included
          "baseline_loop_s": round(med("md_baseline", "loop_s"), 4), "fx_loop_s": round(med("md_fx", "loop_s"), 4),
          "loop_ratio_per_pair": loop, "target_loop_ratio": bench_results.target("<=", 1.02),
          "loop_met": loop["median"] <= 1.02,
          "baseline_step_median_s": round(med("md_baseline", "step_median_s"), 6),
          "fx_step_median_s": round(med("md_fx", "step_median_s"), 6),
          "baseline_peak_rss_kb": int(med("md_baseline", "peak_rss_max_kb")),
          "fx_peak_rss_kb": int(med("md_fx", "peak_rss_max_kb")),
          "peak_rss_ratio_per_pair": rss, "target_peak_rss_ratio": bench_results.target("<=", 1.3),
          "peak_rss_met": rss["median"] <= 1.3,
          "answers_match": all(data["md_fx"][k] == data["md_baseline"][k]
                               for k in ("temp", "e_pair", "etotal", "press") if k in data["md_fx"])}
    kill = "md_recovery_kill"
    if kill in data and "restored_iteration" not in data[kill]:
        md["recovery"] = "no recovery recorded: the run ended before the kill at step 50"
    elif kill in data:
        md["recovery"] = {"active": 4, "spares": 2, "killed_at_step": 50,
                          "restored_iteration": int(med(kill, "restored_iteration")),
                          # kill -> first step completed after the repair (the fx report)
                          "kill_to_resumed_s": bench_results.median_interval(data[kill]["recovery_total_s"]),
                          "detect_s": round(med(kill, "recovery_detect_s"), 4),
                          "shrink_s": round(med(kill, "recovery_shrink_s"), 4),
                          "restore_s": round(med(kill, "recovery_restore_s"), 4),
                          "step_median_s": round(med(kill, "step_median_s"), 6)}
        # Bitwise only against a baseline on as many ranks (sums round per decomposition).
        if md["ranks"] == 4:
            md["recovery"]["answers_match"] = all(data[kill][k] == data["md_baseline"][k]
                                                  for k in ("temp", "e_pair", "etotal", "press") if k in data[kill])
    rep["md"] = md
load = open("/proc/loadavg").read().split()[0] if platform.system() == "Linux" else None
rep["load_average_at_end"] = None if load is None else float(load)
bench_results.write(out, rep, "bench/miniapps/run.sh: medians of interleaved runs on this machine")
print("written:", out)
PY
