#!/usr/bin/python3
"""bench/results/gpu.yaml from a scripts/gpu_check.sh run: the machine, every
check's verdict, the device benchmark's rows with their targets, the
stencil's failure-free overhead against its baseline, and the phases of a
recovery with 1 GiB of device state per rank.

    gpu_results.py RESULTS_DIR LOGS_DIR OUT_YAML
"""
import datetime
import glob
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import bench_results  # noqa: E402
import yaml  # noqa: E402


def statuses(results):
    out = {}
    for path in sorted(glob.glob(os.path.join(results, "*.status"))):
        words = open(path).read().split()
        name = os.path.basename(path)[: -len(".status")]
        entry = {"verdict": words[0]}
        if words[0] == "ok":
            entry["seconds"] = float(words[1])
        elif words[0] == "failed":
            entry["code"] = int(words[1])
        out[name] = entry
    return out


def timing(path, key):
    for line in open(path):
        m = re.match(rf"timing: {key} = (\S+)", line)
        if m:
            return float(m.group(1))
    return None


def bench_rows(logs):
    rows = []
    for path in sorted(glob.glob(os.path.join(logs, "bench_*.log"))):
        row = bench_results.result_line(open(path).read(), "device")
        if row:
            rows.append(row)
    return rows


def overhead(logs):
    base = [timing(p, "solve_s") for p in sorted(glob.glob(os.path.join(logs, "overhead_base_*.out")))]
    fx = [timing(p, "solve_s") for p in sorted(glob.glob(os.path.join(logs, "overhead_fx_*.out")))]
    pairs = [(b, f) for b, f in zip(base, fx) if b and f]
    if not pairs:
        return None
    ratio = bench_results.paired_ratio([f for _, f in pairs], [b for b, _ in pairs])
    return {"pairs": len(pairs), "baseline_solve_s": [round(b, 4) for b, _ in pairs],
            "fx_solve_s": [round(f, 4) for _, f in pairs], "fx_over_baseline": ratio,
            "target_fx_over_baseline": bench_results.target("<=", 1.02)}


def recovery(logs, h2d_s):
    path = os.path.join(logs, "recovery_1gib_report.yaml")
    if not os.path.exists(path):
        return None
    report = yaml.safe_load(open(path))
    recs = report.get("recoveries") or []
    if not recs:
        return None
    sec = recs[0]["seconds"]
    out = {"restored_level": recs[0].get("restored_level"), "restored_iteration": recs[0].get("restored_iteration"),
           "seconds": {k: bench_results.number(v) for k, v in sec.items()}}
    failures = report.get("failures") or []
    if failures:
        out["detection_latency_s"] = bench_results.number(failures[0].get("detection_latency"))
    return out


def main():
    results, logs, out_path = sys.argv[1:4]
    facts = {}
    for line in open(os.path.join(results, "facts.txt")):
        k, _, v = line.partition(": ")
        facts[k] = v.strip().strip("'")
    rows = bench_rows(logs)
    for r in rows:
        r["target_staging_over_pinned"] = bench_results.target(">=", 0.9)
        r["target_app_wait_over_copy"] = bench_results.target("<=", 0.1)
        if r.get("restore_h2d_s"):
            r["target_restore_h2d_over_pinned"] = bench_results.target("<=", 1.3)
    one_gib_h2d = next((r["pinned_h2d_s"] for r in rows if r["ranks"] == 4 and r["mib_per_rank"] == 1024), None)
    data = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": facts,
        "checks": statuses(results),
        "device_bench": rows,
        "stencil_overhead": overhead(logs),
        "stencil_recovery_1gib_per_rank": recovery(logs, one_gib_h2d),
    }
    bench_results.write(out_path, data, "scripts/gpu_check.sh: fx with Kokkos on a GPU (README \"On a GPU\")")


if __name__ == "__main__":
    main()
