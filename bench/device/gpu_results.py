#!/usr/bin/python3
"""bench/results/gpu.yaml from a scripts/gpu_check.sh run: the machine, every
check's verdict, the device benchmark's rows with their targets, the
stencil's and minife's failure-free overhead against their baselines, and the phases of a
recovery with 1 GiB of device state per rank. Every target carries met:
true|false, and a check whose results miss a target says `missed` (with
which) instead of `ok`.

    gpu_results.py RESULTS_DIR LOGS_DIR OUT_YAML
    gpu_results.py --annotate IN_YAML OUT_YAML   # judge an earlier gpu.yaml's numbers again
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


OVERHEADS = {"overhead": "stencil_overhead", "minife_overhead": "minife_overhead"}  # check: gpu.yaml key


def overhead(logs, prefix):
    """Per checkpoint interval N: fx's solve time over the baseline's of the
    same round (gpu_check.sh's PREFIX_base_PAIR.out, PREFIX_fx_N_PAIR.out)."""
    base = {}
    for p in glob.glob(os.path.join(logs, f"{prefix}_base_*.out")):
        base[p.rsplit("_", 1)[1][: -len(".out")]] = timing(p, "solve_s")
    rows = {}
    for p in glob.glob(os.path.join(logs, f"{prefix}_fx_*_*.out")):
        every, pair = os.path.basename(p)[len(f"{prefix}_fx_"): -len(".out")].split("_")
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
                    "commits": stats[0].strip() if stats else None})
    return out or None


MIN_PAIRS = 5  # a median of fewer alternated pairs is not a measurement of 2 %


def judge_overhead(rows):
    for r in rows or []:
        r["target_fx_over_baseline"] = bench_results.target("<=", 1.02, r["fx_over_baseline"]["median"])
        r["target_pairs"] = bench_results.target(">=", MIN_PAIRS, r["pairs"])


def judge_bench(rows):
    """The device benchmark's targets, judged. A restore's H2D is compared
    with an uncontended copy: the 1-rank row's pinned H2D of the same size
    (the 4-rank rows' own pinned copy shares the link four ways)."""
    alone = {r["mib_per_rank"]: r["pinned_h2d_s"] for r in rows
             if r["ranks"] == 1 and r.get("pinned_h2d_s") and not r.get("node_local") and not comparison(r)}
    for r in rows:
        for k in [k for k in r if str(k).startswith("target_")]:
            del r[k]
        r["target_staging_over_pinned"] = bench_results.target(">=", 0.9, r["staging_over_pinned"])
        if not comparison(r):
            r["target_app_wait_over_copy"] = bench_results.target("<=", 0.1, r["app_wait_over_copy"])
        copy = alone.get(r["mib_per_rank"])
        if r.get("restore_h2d_s") and copy:
            r["restore_h2d_over_uncontended"] = round(r["restore_h2d_s"] / copy, 4)
            r["target_restore_h2d_over_uncontended"] = bench_results.target("<=", 1.3, r["restore_h2d_over_uncontended"])


def comparison(row):
    """A row with the buddy exchange in the app's calls (--progress app):
    what the default's exchange thread is measured against, not a target."""
    return row.get("progress") == "app"


def bench_name(row):
    """The GPU check's name of a benchmark row (gpu_check.sh, bench())."""
    return (f"bench_{row['ranks']}r_{row['mib_per_rank']}mib" + ("_node" if row.get("node_local") else "")
            + ("_app" if comparison(row) else ""))


def judge_checks(data):
    """A check that ran (ok) but whose results miss a target says missed."""
    owners = {bench_name(r): r for r in data.get("device_bench") or []}
    for check, key in OVERHEADS.items():
        owners[check] = data.get(key)
    for name, check in (data.get("checks") or {}).items():
        misses = bench_results.missed(owners.get(name))
        if check.get("verdict") in ("ok", "missed") and misses:
            check["verdict"] = "missed"
            check["missed"] = misses
        elif check.get("verdict") == "missed":
            check["verdict"] = "ok"
            check.pop("missed", None)


def judge(data):
    judge_bench(data.get("device_bench") or [])
    for key in OVERHEADS.values():
        judge_overhead(data.get(key))
    judge_checks(data)
    return data


def annotate(in_path, out_path):
    """An earlier gpu.yaml's own numbers judged again (no logs needed)."""
    with open(in_path) as f:
        data = yaml.safe_load(f)
    for key in OVERHEADS.values():
        for r in data.get(key) or []:
            r.pop("target_fx_over_baseline", None)
    for r in data.get("device_bench") or []:
        r.pop("restore_h2d_over_uncontended", None)
    bench_results.write(out_path, judge(data),
                        "scripts/gpu_check.sh: fx with Kokkos on a GPU (docs/gpu.md); targets judged again "
                        "by gpu_results.py --annotate")


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
    one_gib_h2d = next((r["pinned_h2d_s"] for r in rows if r["ranks"] == 4 and r["mib_per_rank"] == 1024), None)
    data = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": facts,
        "checks": statuses(results),
        "device_bench": rows,
        **{key: overhead(logs, check) for check, key in OVERHEADS.items()},
        "stencil_recovery_1gib_per_rank": recovery(logs, one_gib_h2d),
    }
    bench_results.write(out_path, judge(data), "scripts/gpu_check.sh: fx with Kokkos on a GPU (docs/gpu.md)")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--annotate":
        annotate(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4:
        main()
    else:
        sys.exit(__doc__.strip().splitlines()[-2].strip() + "\n" + __doc__.strip().splitlines()[-1].strip())
