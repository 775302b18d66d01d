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
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import bench_results
import yaml


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
    """Per checkpoint interval N: fx's solve time over the baseline's of the same round."""
    base = {}
    for p in glob.glob(os.path.join(logs, "overhead_base_*.out")):
        base[p.rsplit("_", 1)[1][: -len(".out")]] = timing(p, "solve_s")
    rows = {}
    for p in glob.glob(os.path.join(logs, "overhead_fx_*_*.out")):
        every, pair = os.path.basename(p)[len("overhead_fx_"): -len(".out")].split("_")
        rows.setdefault(int(every), []).append((base.get(pair), timing(p, "solve_s"), p))
    out = []
    for every in sorted(rows):
        pairs = [(b, f, p) for b, f, p in rows[every] if b and f]
        if not pairs:
            continue
        stats = [line for line in open(pairs[0][2]) if "asynchronous: the app waited" in line]
        out.append({"checkpoint_every": every, "pairs": len(pairs),
                    "baseline_solve_s": [round(b, 4) for b, _, _ in pairs],
                    "fx_solve_s": [round(f, 4) for _, f, _ in pairs],
                    "fx_over_baseline": bench_results.paired_ratio([f for _, f, _ in pairs], [b for b, _, _ in pairs]),
                    "target_fx_over_baseline": bench_results.target("<=", 1.02),
                    "commits": stats[0].strip() if stats else None})
    return out or None


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
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": facts,
        "checks": statuses(results),
        "device_bench": rows,
        "stencil_overhead": overhead(logs),
        "stencil_recovery_1gib_per_rank": recovery(logs, one_gib_h2d),
    }
    bench_results.write(out_path, data, "scripts/gpu_check.sh: fx with Kokkos on a GPU (docs/gpu.md)")


if __name__ == "__main__":
    main()
