#!/usr/bin/env python3
"""Fuzz target: the supervisor's hostfile parser (scripts/supervisor_policy.py).

Any bytes give a host list or a HostfileError naming the origin; nothing
else may escape. With corpus paths (files or directories) and no atheris
flags, it replays them (the CI test); ./fx fuzz hostfile runs atheris.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import supervisor_policy as policy


def test_one_input(data):
    text = data.decode("utf-8", errors="surrogateescape")
    try:
        hosts = policy.parse_hostfile(text, "fuzzed")
    except policy.HostfileError as e:
        if "fuzzed" not in str(e):
            raise AssertionError(f"message does not name its origin: {e}") from e
        return
    for host, slots in hosts:
        assert policy.HOST_NAME.fullmatch(host), host
        assert slots is None or int(slots.split("=")[1]) >= 1, slots


def replay(paths):
    count = 0
    for p in paths:
        files = [os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs] if os.path.isdir(p) else [p]
        for f in sorted(files):
            with open(f, "rb") as fh:
                test_one_input(fh.read())
            count += 1
    print(f"replayed {count} input(s), none crashed")
    return 0 if count else 1


if __name__ == "__main__":
    if os.environ.get("FX_FUZZ_ATHERIS"):
        import atheris

        atheris.instrument_all()
        atheris.Setup(sys.argv, test_one_input)
        atheris.Fuzz()
    else:
        sys.exit(replay(sys.argv[1:]))
