#!/usr/bin/python3
"""The launcher's options as docs/user-guide.md tables them, against what
`scripts/launch.sh --help` says (the one source): every option has its row,
and the row names the option's default (its variable and its value). A
launcher option or default changed without the guide fails here.

Usage: launch_options_docs_test.py
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def help_options():
    """(option, [what its default names]) from launch.sh --help."""
    text = subprocess.run(
        [os.path.join(ROOT, "scripts", "launch.sh"), "--help"], capture_output=True, text=True, check=True
    ).stdout
    entries = []  # [option, its text with continuation lines]
    for line in text.splitlines():
        if m := re.match(r"^  (-[-a-z]+|-[a-z])\b(.*)$", line):
            entries.append([m.group(1), m.group(2)])
        elif entries and re.match(r"^ {4,}\S", line):
            entries[-1][1] += " " + line.strip()
        elif entries and not line.startswith(" "):
            break  # the exit codes after the options
    out = []
    for opt, desc in entries:
        default = re.search(r"\(default ([^)]*)\)", desc)
        names = re.findall(r"\\?\$(FX_[A-Z_]+)|\bor (\d+)|^(\d+)$", default.group(1)) if default else []
        out.append((opt, [a or b or c for a, b, c in names]))
    return out


def guide_rows():
    """{option: row} from the user guide's launcher table."""
    with open(os.path.join(ROOT, "docs", "user-guide.md"), encoding="utf-8") as f:
        return {m.group(1): line for line in f if (m := re.match(r"^\| `(-[-a-z]+|-[a-z])[ `]", line))}


def main():
    options, rows = help_options(), guide_rows()
    problems = []
    if len(options) < 9:
        problems.append(f"launch.sh --help lists {len(options)} options; the parse expects at least 9")
    for opt, defaults in options:
        row = rows.get(opt)
        if row is None:
            problems.append(f"{opt}: no row in docs/user-guide.md's launcher table")
            continue
        for d in defaults:
            if not re.search(rf"`\$?{re.escape(d)}`|\b{re.escape(d)}\b", row):
                problems.append(f"{opt}: the guide's row does not name its default '{d}': {row.strip()}")
    for p in problems:
        print(f"launch_options_docs: {p}", file=sys.stderr)
    print(f"launch_options_docs: {len(options)} options, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
