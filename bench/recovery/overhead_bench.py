#!/usr/bin/python3
"""Failure-free overhead of the fx runtime and the cost of idle spares.

Variants, launched alternately in one invocation so they share the noise:
plain MPI loop; fx with no spares; fx with 2 idle spares in each idle mode.
Usage: overhead_bench.py BUILD_DIR OUT.yaml [--runs N] [--ranks 4] [--steps 60] [--work-ms 10]
"""
import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
import bench_results

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAUNCH = os.path.join(ROOT, "scripts", "launch.sh")


def once(exe, n, spares, extra, env, steps, work, field="ms_per_step"):
    cmd = [LAUNCH, "-n", str(n), "-s", str(spares), "-t", "300", "--", exe, "--steps", str(steps), "--work-ms", str(work)] + extra
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=330, check=False)
    d = bench_results.result_line(p.stdout, "loop")
    if d:
        return float(d[field])
    raise SystemExit(f"no result from {' '.join(cmd)}: exit {p.returncode}\n{p.stdout[-1500:]}\n{p.stderr[-1500:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("out")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--work-ms", type=float, default=10)
    a = ap.parse_args()
    exe = os.path.join(a.build, "bench", "recovery", "fx_bench_loop_overhead")
    base = dict(os.environ, FX_LOG_LEVEL="warn")
    variants = [
        ("plain", 0, ["--plain"], {}),
        ("fx", 0, [], {}),
        ("fx_spares_sleep", 2, [], {"FX_SPARE_IDLE": "sleep"}),
        ("fx_spares_yield", 2, [], {"FX_SPARE_IDLE": "yield"}),
        ("fx_spares_block", 2, [], {"FX_SPARE_IDLE": "block"}),
    ]
    # One calibration for every variant, so they all do the same work.
    reps = int(once(exe, 1, 0, ["--plain"], base, 3, a.work_ms, "reps"))
    variants = [(name, spares, extra + ["--reps", str(reps)], env) for name, spares, extra, env in variants]
    times = {v[0]: [] for v in variants}
    for i in range(a.runs):
        for name, spares, extra, env in variants:
            t = once(exe, a.ranks, spares, extra, dict(base, **env), a.steps, a.work_ms)
            times[name].append(t)
            print(f"run {i + 1} {name}: {t:.3f} ms/step", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {
        "ranks": a.ranks,
        "steps": a.steps,
        "work_ms_per_rank": a.work_ms,
        "runs": a.runs,
        "reps_per_step": reps,
        "median_ms_per_step": {k: round(v, 3) for k, v in med.items()},
        "fx_overhead_percent": round(100 * (med["fx"] / med["plain"] - 1), 2),
        "spare_cost_percent": {m: round(100 * (med[f"fx_spares_{m}"] / med["fx"] - 1), 2) for m in ("sleep", "yield", "block")},
        "target_overhead_percent": bench_results.target("<=", 1.0),
        "target_spare_cost_percent": bench_results.target("<=", 5.0),
    }
    bench_results.write(a.out, {"overhead": out},
                        "failure-free overhead of fx and cost of idle spares (medians, same invocation)")


if __name__ == "__main__":
    main()
