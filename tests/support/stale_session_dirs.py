#!/usr/bin/python3
"""Stale Open MPI session directories, as killed launches leave them.

  stale_session_dirs.py make DIR COUNT   DIR afresh, holding the session
                                         directory (ompi.<pid>, with PMIx's
                                         rendezvous files) that a killed
                                         mpiexec with each of the next COUNT
                                         process ids would have left
  stale_session_dirs.py check DIR        fails when anything else is in DIR
                                         (a launch left something), then
                                         removes DIR

PMIx will not replace a rendezvous file, so with Open MPI's defaults an
mpiexec whose pid matches a stale directory in its TMPDIR fails to start.
"""
import os
import shutil
import socket
import sys

MANIFEST = "stale.list"  # the names make wrote


def pids_after(last, count):
    """The next COUNT pids the kernel hands out, wrapping past pid_max."""
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    first_reused = 300  # RESERVED_PIDS: where the kernel starts again
    span = pid_max - first_reused
    return [first_reused + (last + i - first_reused) % span for i in range(1, min(count, span) + 1)]


def make(root, count):
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    host = socket.gethostname().split(".")[0]
    with open("/proc/sys/kernel/ns_last_pid") as f:
        last = int(f.read())
    pids = pids_after(last, count)
    with open(os.path.join(root, MANIFEST), "w") as f:
        f.write("".join(f"ompi.{pid}\n" for pid in pids))
    for pid in pids:
        d = os.path.join(root, f"ompi.{pid}")
        os.mkdir(d)
        text = f"prterun-{host}-{pid}@0.0;tcp4://127.0.0.1:1\n5.0\n{pid}\n0:0\n\n"
        for name in (f"pmix.{host}.tool", f"pmix.{host}.tool.{pid}"):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
    print(f"stale session directories for {count} pids after {last} in {root}")


def check(root):
    with open(os.path.join(root, MANIFEST)) as f:
        stale = set(f.read().split()) | {MANIFEST}
    left = sorted(set(os.listdir(root)) - stale)
    shutil.rmtree(root, ignore_errors=True)
    if left:
        sys.exit(f"stale_session_dirs: the launches left {len(left)} entries in {root}: {' '.join(left[:10])}")
    print(f"nothing left in {root} beside the stale session directories")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        check(sys.argv[2])
    else:
        sys.exit(__doc__)
