#!/usr/bin/python3
"""Checkpoint interval under failures: fixed intervals against `every: auto`.

The stencil (128^3 on 4 ranks + spares, 4.5 MB per rank) runs a fixed
number of iterations while fx's chaos injection kills ranks with
exponential gaps of mean --mtbf-iterations (seeded: every setting sees the
same failure schedule for a seed). A failure-free calibration run first
measures the step time, which turns the MTBF into seconds for `auto`
(checkpoint.mtbf_s). For each seed the settings run alternately; the
figure is each setting's median total time (the report's phases.total) and
its ratio to the best fixed interval's.
Usage: interval_bench.py BUILD_DIR OUT.yaml [--seeds N] [--iterations N]
       [--mtbf-iterations M] [--failures F] [--intervals 5,10,25,50,100] [--n 128]
"""
import argparse
import atexit
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
import bench_results
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAUNCH = os.path.join(ROOT, "scripts", "launch.sh")


def run(a, exe, report, spares, settings, inject_env):
    n = str(a.n)
    cmd = [LAUNCH, "-n", "4", "-s", str(spares), "-t", "300", "--", exe, "--nx", n, "--ny", n, "--nz", n,
           "--iterations", str(a.iterations), "--progress-every", "0"]
    for s in settings:
        cmd += ["--fx-set", s]
    env = dict(os.environ, FX_REPORT=report, FX_LOG_LEVEL="warn", FX_INJECT="", **inject_env)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=400, check=False)
    if p.returncode not in (0, 3):
        sys.stderr.write(f"exit {p.returncode}: {' '.join(cmd)}\n{p.stderr[-3000:]}\n")
        return None, p.returncode
    with open(report) as f:
        return yaml.safe_load(f), p.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("out")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--mtbf-iterations", type=float, default=200)
    ap.add_argument("--failures", type=int, default=4)
    ap.add_argument("--intervals", default="5,10,25,50,100")
    ap.add_argument("--n", type=int, default=128)
    a = ap.parse_args()
    exe = os.path.join(a.build, "miniapps", "stencil", "stencil")
    tmp = tempfile.mkdtemp(prefix="fx-bench-interval.")
    atexit.register(shutil.rmtree, tmp, True)
    report = os.path.join(tmp, "report.yaml")
    base = ["checkpoint.memory.buddy_distance=1"]

    # Calibration: the step time without failures (a checkpoint every 10).
    cal, rc = run(a, exe, report, 0, base + ["checkpoint.memory.every=10"], {})
    if cal is None:
        sys.exit(f"interval_bench: the calibration run failed (exit {rc})")
    step_s = (cal["phases"]["steps"]) / a.iterations
    # An asynchronous commit costs the app its wait plus its time after.
    commits = sorted(c["seconds"] + c.get("background_s", 0) for c in cal["checkpoints"])
    commit_s = commits[len(commits) // 2]
    mtbf_s = a.mtbf_iterations * step_s
    print(f"calibration: step {step_s * 1e3:.2f} ms, commit {commit_s * 1e3:.2f} ms, "
          f"MTBF {a.mtbf_iterations:g} iterations = {mtbf_s:.3f} s", flush=True)

    names = [f"every_{k}" for k in a.intervals.split(",")] + ["auto"]
    settings = {f"every_{k}": [f"checkpoint.memory.every={k}"] for k in a.intervals.split(",")}
    settings["auto"] = ["checkpoint.memory.every=auto", f"checkpoint.mtbf_s={mtbf_s:.6g}"]
    totals = {name: [] for name in names}
    chosen, failures, bad = [], {name: [] for name in names}, 0
    for seed in range(a.seeds):
        chaos = {"FX_CFG_INJECT__CHAOS__MTBF_ITERATIONS": f"{a.mtbf_iterations:g}",
                 "FX_CFG_INJECT__CHAOS__MAX_FAILURES": str(a.failures),
                 "FX_CFG_INJECT__CHAOS__START": "2", "FX_CHAOS_SEED": str(seed + 1)}
        for name in names:
            r, rc = run(a, exe, report, a.failures, base + settings[name], chaos)
            if r is None:
                bad += 1
                continue
            totals[name].append(r["phases"]["total"])
            failures[name].append(len(r["failures"]))
            if name == "auto":
                chosen += [c["next_interval"] for c in r["checkpoints"] if c.get("next_interval")]
            print(f"seed {seed + 1} {name}: exit {rc}, {len(r['failures'])} failures, "
                  f"total {r['phases']['total']:.3f} s", flush=True)

    med = {k: statistics.median(v) for k, v in totals.items() if v}
    fixed = {k: v for k, v in med.items() if k != "auto"}
    best = min(fixed, key=fixed.get) if fixed else None
    out = {
        "benchmark": "interval",
        "machine": "2 cores, oversubscribed (4 ranks + spares): compare ratios",
        "app": f"stencil {a.n}^3 on 4 ranks, {a.iterations} iterations",
        "calibration": {"step_ms": round(step_s * 1e3, 3), "commit_ms": round(commit_s * 1e3, 3)},
        "mtbf": {"iterations": a.mtbf_iterations, "seconds": round(mtbf_s, 4)},
        "failures_per_run": a.failures, "seeds": a.seeds, "failed_runs": bad,
        "median_total_s": {k: round(v, 4) for k, v in med.items()},
        "failures_seen_median": {k: statistics.median(v) for k, v in failures.items() if v},
        "auto_intervals_chosen": sorted(set(chosen)),
        "best_fixed": best,
    }
    if best and "auto" in med:
        out["auto_over_best_fixed"] = round(med["auto"] / fixed[best], 3)
        out["target_auto_over_best_fixed"] = bench_results.target("<=", 1.1)
        out["met"] = bool(out["auto_over_best_fixed"] <= 1.1)
    load = open("/proc/loadavg").read().split()[0]
    out["load_average_at_end"] = float(load)
    bench_results.write(a.out, out, "bench/data_store/interval_bench.py: medians over seeds, settings alternated")


if __name__ == "__main__":
    main()
