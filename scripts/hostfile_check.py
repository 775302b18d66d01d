#!/usr/bin/env python3
"""A hostfile checked before Open MPI reads it (fx run --hostfile, and the
supervisor): a mistake there reached mpiexec and ended as exit 4,
"aborted after failures", under its banners.

usage: hostfile_check.py FILE
  exit 0  every line parses and every host resolves (prints nothing)
  exit 2  FILE is not a readable file, or a line is not "host [slots=N]":
          one line naming FILE (and its line)
  exit 1  a host does not resolve: an environment failure, one line
"""
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import supervisor_policy as policy


def read_hosts(path):
    """[(host, slots)] of the hostfile at `path`; HostfileError naming it."""
    if os.path.isdir(path):
        raise policy.HostfileError(f"'{path}' is a directory, not a hostfile")
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError as e:
        raise policy.HostfileError(f"'{path}': {e.strerror}") from None
    return policy.parse_hostfile(text, f"'{path}'")


def unresolved(hosts):
    """The hosts whose names do not resolve (getaddrinfo)."""
    bad = []
    for host, _ in hosts:
        try:
            socket.getaddrinfo(host, None)
        except OSError:
            bad.append(host)
    return bad


def check(path, who):
    """(hosts, 0, "") when usable, else ([], exit code, the one line) with
    `who` ("fx run") leading it."""
    try:
        hosts = read_hosts(path)
    except policy.HostfileError as e:
        return [], 2, f"{who}: --hostfile {e}"
    bad = unresolved(hosts)
    if bad:
        return [], 1, (f"{who}: --hostfile '{path}': host(s) {', '.join(bad)} do not resolve (no address for "
                       "the name): an environment failure, nothing started")
    return hosts, 0, ""


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    _, code, line = check(argv[1], "fx run")
    if code:
        print(line, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
