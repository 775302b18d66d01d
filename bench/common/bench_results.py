#!/usr/bin/python3
"""Results files of the benchmarks (bench/results/*.yaml), written and checked
through PyYAML so that every one of them loads in any YAML parser.

    import bench_results                      # PYTHONPATH=bench/common
    bench_results.write(path, data, comment)  # data: dicts, lists, numbers, strings
    bench_results.target("<=", 1.5)           # {op: "<=", value: 1.5}
    bench_results.target("<=", 1.5, 1.7)      # {op: "<=", value: 1.5, met: false}
    bench_results.missed(data)                # the keys of targets marked met: false
    bench_results.result_line(stdout, "loop") # a program's `loop: {...}` line (fx_bench::Line)
    bench_results.median_interval(values)     # median of runs and its 90 % bootstrap interval
    bench_results.paired_ratio(a, b)          # the same of a[i]/b[i], runs made in pairs

    bench_results.py --check FILE...          # load each file, check its targets

A target is always a map {op, value} (and met: true|false where the value
it judges was measured): op one of <=, >=, <, >, ==; the key naming it is
`target` or starts with `target_`. --check fails naming the
file and the parser's error, or the key of a target written otherwise.
"""
import os
import random
import statistics
import sys

import yaml

OPS = ("<=", ">=", "<", ">", "==")


def meets(measured, op, value):
    """Whether `measured op value` holds."""
    return {"<=": measured <= value, ">=": measured >= value, "<": measured < value,
            ">": measured > value, "==": measured == value}[op]


def target(op, value, measured=None):
    """{op, value}; given the measured value, also met: whether it holds."""
    if op not in OPS:
        raise ValueError(f"target operator {op!r} is not one of {', '.join(OPS)}")
    out = {"op": op, "value": value}
    if measured is not None:
        out["met"] = bool(meets(measured, op, value))
    return out


def targets(node, where=""):
    """(path, value) of every target in node: keys `target` or `target_*`."""
    if isinstance(node, dict):
        for k, v in node.items():
            path = f"{where}.{k}" if where else str(k)
            if str(k) == "target" or str(k).startswith("target_"):
                yield path, v
            else:
                yield from targets(v, path)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from targets(v, f"{where}[{i}]")


def missed(node):
    """Keys of the targets in node marked met: false."""
    return [path for path, v in targets(node) if isinstance(v, dict) and v.get("met") is False]


def number(value):
    """value, or the float a string spells: YAML 1.1 (PyYAML) reads yaml-cpp's
    9e-05 (no dot) as a string."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def median_interval(values, resamples=4000):
    """The median of runs' values and its 90 % percentile-bootstrap interval
    (fixed seed: the same data, the same interval)."""
    rng = random.Random(1)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    return {"runs": len(values), "median": round(statistics.median(values), 4),
            "interval_90": [round(meds[int(0.05 * resamples)], 4), round(meds[int(0.95 * resamples) - 1], 4)]}


def paired_ratio(a, b):
    """median_interval of a[i] / b[i], runs made in pairs (one of each,
    alternately, so that a pair shares the machine's state)."""
    return median_interval([x / y for x, y in zip(a, b, strict=False)])


def result_line(text, *names):
    """The map of the first line `<name>: {...}` in text for any of names, or None."""
    for line in text.splitlines():
        if any(line.startswith(f"{name}: {{") for name in names):
            doc = yaml.safe_load(line)
            return {k: number(v) for k, v in next(iter(doc.values())).items()}
    return None


def write(path, data, comment=""):
    """Write data as YAML to path, after `comment` as # lines; print it too."""
    text = "".join(f"# {line}\n" for line in comment.splitlines())
    text += yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True, width=100)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    print(text, end="", flush=True)


def well_formed(v):
    """A target written as {op, value} (and a boolean met)."""
    return (isinstance(v, dict) and set(v) - {"met"} == {"op", "value"} and v["op"] in OPS
            and isinstance(v["value"], (int, float)) and not isinstance(v["value"], bool)
            and isinstance(v.get("met", False), bool))


def bad_targets(node):
    """Keys of targets in node not written as {op, value}."""
    return [f"{path}: {v!r}" for path, v in targets(node) if not well_formed(v)]


def check(paths):
    failed = 0
    for path in paths:
        try:
            with open(path) as f:
                doc = yaml.safe_load(f)
        except OSError as e:
            print(f"{path}: not written: {e.strerror}", file=sys.stderr)
            failed += 1
            continue
        except yaml.YAMLError as e:
            print(f"{path}: not valid YAML: {e}", file=sys.stderr)
            failed += 1
            continue
        problems = [] if isinstance(doc, dict) else [f"top level is {type(doc).__name__}, not a map"]
        problems += [f"target not {{op, value}}: {b}" for b in bad_targets(doc)]
        for p in problems:
            print(f"{path}: {p}", file=sys.stderr)
        failed += bool(problems)
        if not problems:
            print(f"{path}: ok")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "--check":
        sys.exit("usage: bench_results.py --check FILE...")
    sys.exit(check(sys.argv[2:]))
