#!/usr/bin/python3
# Debian's python3: PyYAML comes from python3-yaml; the venv has only Open MPI.
"""check_report.py REPORT ASSERTION...: check a run report (YAML) for tests.

Assertions (each must hold):
  count:KEY=N        the list at KEY has N entries       count:failures=3
  eq:PATH=VALUE      the value at dotted PATH, as text   eq:exit.code=3  (list index: failures.0.iteration)
  has:PATH           PATH exists                         has:phases.initialize
  min:LIST.FIELD=N   every entry's FIELD is >= N         min:failures.iteration=1
"""
import sys

import yaml


def at(doc, path):
    for part in path.split("."):
        if isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        elif isinstance(doc, dict) and part in doc:
            doc = doc[part]
        else:
            raise KeyError(path)
    return doc


def check(doc, assertion):
    kind, _, rest = assertion.partition(":")
    key, _, want = rest.partition("=")
    if kind == "count":
        got = len(at(doc, key) or [])
        return got == int(want), f"{key} has {got} entries, expected {want}"
    if kind == "eq":
        got = at(doc, key)
        return str(got) == want, f"{key} is {got!r}, expected {want!r}"
    if kind == "has":
        try:
            at(doc, key)
            return True, ""
        except KeyError:
            return False, f"{key} is missing"
    if kind == "min":
        lst, _, field = key.rpartition(".")
        bad = [e.get(field) for e in at(doc, lst) or [] if e.get(field) is None or e.get(field) < float(want)]
        return not bad, f"{lst}[].{field} below {want}: {bad}"
    return False, f"unknown assertion {assertion!r}"


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        with open(sys.argv[1]) as f:
            doc = yaml.safe_load(f)
    except OSError as e:
        print(f"check_report: cannot read the report: {e}", file=sys.stderr)
        return 1
    failed = 0
    for a in sys.argv[2:]:
        try:
            ok, why = check(doc, a)
        except KeyError as e:
            ok, why = False, f"{e.args[0]} is missing"
        if not ok:
            print(f"check_report: {sys.argv[1]}: {a}: {why}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
