#!/usr/bin/env python3
"""Pick tests of a configured build tree, and the targets they run.

usage: ctest_select.py BUILD_DIR (tests|targets) RULE...

A RULE is LABEL_REGEX:NAME_REGEX; a test is picked when some rule has a
label of the test matching LABEL_REGEX and its name matching NAME_REGEX
(both searched, as ctest's -L and -R do). ctest cannot OR its filters.

  tests    prints ctest's -I value naming the picked tests
  targets  prints the build targets whose outputs the picked tests run
           (an argument under BUILD_DIR whose file name is a target),
           so a tree builds only what its tests need
"""
import glob
import json
import os
import re
import shlex
import subprocess
import sys


def tests_of(build):
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["tests"]


def prop_of(test, name):
    for prop in test.get("properties", []):
        if prop["name"] == name:
            return prop["value"]
    return []


def picked(tests, rules):
    for number, test in enumerate(tests, start=1):
        labels = prop_of(test, "LABELS")
        for label_re, name_re in rules:
            if re.search(name_re, test["name"]) and any(re.search(label_re, label) for label in labels):
                yield number, test
                break


def with_fixtures(tests, chosen):
    """The picked tests and the fixture set-ups and clean-ups ctest adds to them."""
    fixtures = {f for _, test in chosen for f in prop_of(test, "FIXTURES_REQUIRED")}
    for test in tests:
        if fixtures & set(prop_of(test, "FIXTURES_SETUP") + prop_of(test, "FIXTURES_CLEANUP")):
            yield test
    yield from (test for _, test in chosen)


def commands_of(build):
    """Each test's command line as CTestTestfile.cmake has it: ctest's JSON
    leaves out the command of a test whose program is not built yet."""
    commands = {}
    for path in glob.glob(os.path.join(build, "**", "CTestTestfile.cmake"), recursive=True):
        with open(path) as f:
            for line in f:
                m = re.match(r"add_test\(\[=\[(.*?)\]=\] (.*)\)$", line.rstrip())
                if m:
                    commands[m.group(1)] = shlex.split(m.group(2))
    return commands


def build_targets(build):
    """The tree's top-level targets: make lists them as '... NAME', Ninja as
    'NAME: phony' (beside 'DIR/NAME: phony' for each directory's own)."""
    out = subprocess.run(["cmake", "--build", build, "--target", "help"], check=True,
                         capture_output=True, text=True).stdout
    make = {line[4:].split()[0] for line in out.splitlines() if line.startswith("... ")}
    ninja = {m.group(1) for m in re.finditer(r"^([^/\s:]+): phony$", out, re.M)}
    return make | ninja


def main(argv):
    if len(argv) < 4 or argv[2] not in ("tests", "targets"):
        sys.exit(__doc__)
    build, what = os.path.abspath(argv[1]), argv[2]
    rules = []
    for rule in argv[3:]:
        label_re, sep, name_re = rule.partition(":")
        if not sep:
            sys.exit(f"ctest_select.py: rule '{rule}' is not LABEL_REGEX:NAME_REGEX")
        rules.append((label_re, name_re))
    tests = tests_of(build)
    chosen = list(picked(tests, rules))
    if not chosen:
        sys.exit(f"ctest_select.py: no test of {build} matches {' '.join(argv[3:])}")
    if what == "tests":
        print("0,0,0," + ",".join(str(n) for n, _ in chosen))
        return
    known, commands, needed = build_targets(build), commands_of(build), set()
    for test in with_fixtures(tests, chosen):
        for arg in commands.get(test["name"], []):
            name = os.path.basename(arg)
            if arg.startswith(build + os.sep) and name in known:
                needed.add(name)
    print(" ".join(sorted(needed)))


if __name__ == "__main__":
    main(sys.argv)
