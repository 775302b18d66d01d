#!/usr/bin/python3
"""minife's miniFE summary against a miniFE output of the same shape.

    check_minife_summary.py REFERENCE.yaml DIR PREFIX...

For each PREFIX (miniFE.<nx>x<ny>x<nz>.P<ranks>) the newest
DIR/PREFIX.<YYYY>:<MM>:<DD>-<HH>:<MM>:<SS>.yaml (miniFE's file name) must
load with PyYAML and have exactly the reference's keys, nested the same
way and in the same order; its dimensions and processor count must be
those of its name. The files checked are removed (each run writes a new
name). Exit 1 naming the file and what differs.
"""
import glob
import os
import re
import sys

import yaml

NAME = re.compile(r"^(miniFE\.(\d+)x(\d+)x(\d+)\.P(\d+))\.\d{4}:\d\d:\d\d-\d\d:\d\d:\d\d\.yaml$")


def keys(node, where=""):
    """Every key path of a mapping, depth first, in document order."""
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            out.append(f"{where}{k}")
            out += keys(v, f"{where}{k} / ")
    return out


def load(path):
    try:
        with open(path) as f:
            return yaml.safe_load(f)
    except yaml.YAMLError as e:
        sys.exit(f"check_minife_summary: {path} is not YAML: {e}")


def main():
    reference, folder, prefixes = sys.argv[1], sys.argv[2], sys.argv[3:]
    want = keys(load(reference))
    for prefix in prefixes:
        found = sorted(glob.glob(os.path.join(glob.escape(folder), glob.escape(prefix) + ".*.yaml")),
                       key=os.path.getmtime)
        if not found:
            sys.exit(f"check_minife_summary: no {prefix}.<date-time>.yaml in {folder}")
        path = found[-1]
        m = NAME.match(os.path.basename(path))
        if not m or m.group(1) != prefix:
            sys.exit(f"check_minife_summary: {path}: not miniFE's name {prefix}.YYYY:MM:DD-HH:MM:SS.yaml")
        doc = load(path)
        got = keys(doc)
        missing = [k for k in want if k not in got]
        extra = [k for k in got if k not in want]
        if missing or extra:
            sys.exit(f"check_minife_summary: {path}: keys differ from {os.path.basename(reference)}: "
                     f"missing {missing}, not in miniFE {extra}")
        if got != want:
            sys.exit(f"check_minife_summary: {path}: keys in another order than miniFE's: {got}")
        params = doc["Global Run Parameters"]
        dims = [params["dimensions"][k] for k in ("nx", "ny", "nz")]
        if dims != [int(m.group(i)) for i in (2, 3, 4)] or params["number of processors"] != int(m.group(5)):
            sys.exit(f"check_minife_summary: {path}: dimensions {dims}, {params['number of processors']} "
                     "processors: not those of its name")
        print(f"check_minife_summary: {path}: {len(got)} keys, miniFE's")
        for f in found:
            os.remove(f)


if __name__ == "__main__":
    main()
