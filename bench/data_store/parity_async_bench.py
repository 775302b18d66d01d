#!/usr/bin/python3
"""Parity commits: the application's time per commit, synchronous against
asynchronous (issue 43, item 1).

The stencil (--n^3 on 4 ranks, one parity group of 4) commits every
--every iterations with checkpoint.memory.async false, true with the app's
calls moving the XOR ring (progress: app), and true with the store's
thread moving it (progress: thread), alternated within each round. Per run
the figure is the median over its commits of the app's time on a commit
(its wait in commit() plus, when asynchronous, its time in the step-end
calls until committed), and the run's total; per setting the median over
rounds, and the ratios to the synchronous setting.
Usage: parity_async_bench.py BUILD_DIR OUT.yaml [--rounds N] [--n N]
       [--iterations N] [--every K] [--scheme parity|buddy]
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
SETTINGS = {
    "sync": ["checkpoint.memory.async=false"],
    "async_app": ["checkpoint.memory.async=true", "checkpoint.memory.progress=app"],
    "async_thread": ["checkpoint.memory.async=true", "checkpoint.memory.progress=thread"],
}


def run(a, exe, report, settings):
    n = str(a.n)
    cmd = [LAUNCH, "-n", "4", "-s", "0", "-t", "300", "--", exe, "--nx", n, "--ny", n, "--nz", n,
           "--iterations", str(a.iterations), "--progress-every", "0",
           "--fx-set", f"checkpoint.memory.scheme={a.scheme}", "--fx-set", "checkpoint.memory.parity_group=4",
           "--fx-set", f"checkpoint.memory.every={a.every}", "--fx-set", "checkpoint.hdf5.every=0"]
    for s in settings:
        cmd += ["--fx-set", s]
    env = dict(os.environ, FX_REPORT=report, FX_LOG_LEVEL="warn", FX_INJECT="")
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=400, check=False)
    if p.returncode != 0:
        sys.exit(f"exit {p.returncode}: {' '.join(cmd)}\n{p.stderr[-3000:]}")
    with open(report) as f:
        r = yaml.safe_load(f)
    costs = [c["seconds"] + c.get("background_s", 0) for c in r["checkpoints"]]
    return statistics.median(costs), r["phases"]["total"], len(costs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=192)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--scheme", default="parity", choices=["parity", "buddy"])  # buddy: for comparison
    a = ap.parse_args()
    exe = os.path.join(a.build, "miniapps", "stencil", "stencil")
    tmp = tempfile.mkdtemp(prefix="fx-bench-parity.")
    atexit.register(shutil.rmtree, tmp, True)
    report = os.path.join(tmp, "report.yaml")
    cost = {k: [] for k in SETTINGS}
    total = {k: [] for k in SETTINGS}
    commits = 0
    for i in range(a.rounds):
        for name, settings in SETTINGS.items():
            c, t, commits = run(a, exe, report, settings)
            cost[name].append(c)
            total[name].append(t)
            print(f"round {i + 1} {name}: {c * 1e3:.2f} ms per commit, total {t:.3f} s", flush=True)
    med_cost = {k: statistics.median(v) for k, v in cost.items()}
    med_total = {k: statistics.median(v) for k, v in total.items()}
    out = {
        "benchmark": "parity_async",
        "machine": "2 cores, oversubscribed (4 ranks): compare ratios",
        "app": f"stencil {a.n}^3 on 4 ranks, {a.iterations} iterations, scheme {a.scheme} (parity: one group of 4), "
               f"a commit every {a.every} ({commits} commits)",
        "rounds": a.rounds,
        "median_app_ms_per_commit": {k: round(v * 1e3, 3) for k, v in med_cost.items()},
        "median_total_s": {k: round(v, 4) for k, v in med_total.items()},
        "app_per_commit_over_sync": {k: round(v / med_cost["sync"], 3) for k, v in med_cost.items()},
        "total_over_sync": {k: round(v / med_total["sync"], 3) for k, v in med_total.items()},
        "load_average_at_end": float(open("/proc/loadavg").read().split()[0]),
    }
    bench_results.write(a.out, out, "bench/data_store/parity_async_bench.py: medians over rounds, settings alternated")


if __name__ == "__main__":
    main()
