#!/usr/bin/python3
"""A rank killed on another host: kill -> resume, fx against a raw ULFM loop.

The loop of the recovery and scaling benchmarks (an allreduce per 1 ms step,
a SIGKILL at step 50, every survivor stamps its resume and the slowest is
reported; bench/recovery/scaling_bench.py's Runner) at 4+2 ranks on 3 test
hosts (scripts/with_testhosts.sh, --map-by node: world rank w on host
w % 3, so logical 0 and 3 share host 1 and the spares sit on hosts 2 and 3).
For every victim position (logical 0-3), fx and the raw loop alternate run
by run on the same hosts in one invocation, over TCP between the hosts'
network namespaces. Per victim and pooled: medians, fx / raw, and fx's
phases (how much of the time is the substrate: detection and shrink).

Target (issue 14): fx / raw <= 1.3 at every victim position.
Usage: remote_bench.py BUILD_DIR [OUT.yaml] [--runs N] [--victims 0,1,2,3] [--limit S]
Exit 77 (and a results file saying so) where test hosts cannot be made.
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "recovery"))
import bench_results  # noqa: E402
from scaling_bench import Runner, summarise  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = os.path.join(ROOT, "scripts")
HOSTS = 3
TARGET = 1.3


def inner(a):
    """On the test hosts (FX_HOSTFILE set by with_testhosts.sh): the runs."""
    victims = [int(v) for v in a.victims.split(",")]
    runner = Runner(a.build, limit=a.limit)
    rows = {v: {"raw": [], "fx": []} for v in victims}
    load = [os.getloadavg()[0]]
    t0 = time.time()
    for i in range(a.runs):
        for v in victims:
            order = ("raw", "fx") if i % 2 == 0 else ("fx", "raw")
            for name in order:
                fields = runner.once(name, 4, 2, [v])
                if fields:
                    rows[v][name].append(fields)
                print(f"victim {v} {name} run {i + 1}: {fields}", flush=True)
            load.append(os.getloadavg()[0])
    cases = {}
    for v in victims:
        c = summarise(rows[v], 6)
        c["victim_host"] = v % HOSTS + 1
        c["target_ratio"] = bench_results.target("<=", TARGET)
        c["met"] = c["ratio_fx_over_raw"] is not None and c["ratio_fx_over_raw"] <= TARGET
        cases[f"victim_{v}"] = c
    pooled = {k: [r for v in victims for r in rows[v][k]] for k in ("raw", "fx")}
    p = summarise(pooled, 6)
    p["target_ratio"] = bench_results.target("<=", TARGET)
    p["met"] = p["ratio_fx_over_raw"] is not None and p["ratio_fx_over_raw"] <= TARGET
    doc = {"remote": {
        "hosts": f"{HOSTS} test hosts (network namespaces, TCP), --map-by node: world rank w on host w % {HOSTS}",
        "processes": "4+2", "runs_per_variant_and_victim": a.runs,
        "load_average": {"min": round(min(load), 2), "max": round(max(load), 2)},
        "minutes": round((time.time() - t0) / 60, 1),
        "victims": cases, "pooled": p,
        "met": all(c["met"] for c in cases.values()),
        "launches": runner.launches, "hangs": runner.hangs, "runs_leaving_stray_processes": runner.stray_runs}}
    bench_results.write(a.out, doc, (
        "A rank killed on another host: kill -> resumed allreduce, fx vs a raw ULFM repair loop, alternated\n"
        "on the same 3 test hosts in one invocation, per victim position and pooled (milliseconds, medians).\n"
        "floor_detect_plus_shrink: Open MPI's detection and ULFM's shrink over TCP, which both pay."))
    ok = all(c["raw_ok_runs"] and c["fx_ok_runs"] for c in cases.values())
    return 0 if ok and not runner.hangs and not runner.stray_runs else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("out", nargs="?", default=os.path.join(ROOT, "bench", "results", "remote.yaml"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--victims", default="0,1,2,3")
    ap.add_argument("--limit", type=int, default=150, help="seconds per launch (a smoke run keeps under ctest's)")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.out = os.path.abspath(a.out)
    if a.inner:
        return inner(a)
    if subprocess.run([os.path.join(SCRIPTS, "testhosts.sh"), "status"], capture_output=True, check=False).returncode == 77:
        bench_results.write(a.out, {"remote": {"skipped": "test hosts unavailable (root, ip netns, sshd)"}})
        return 77
    env = dict(os.environ, FX_TESTHOSTS_PREFIX="fxr", FX_TESTHOSTS_NET="10.231.86")
    cmd = [os.path.join(SCRIPTS, "with_testhosts.sh"), str(HOSTS), "--", sys.executable, os.path.abspath(__file__),
           a.build, a.out, "--runs", str(a.runs), "--victims", a.victims, "--limit", str(a.limit), "--inner"]
    return subprocess.run(cmd, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
