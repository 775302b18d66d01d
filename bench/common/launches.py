"""The processes of one benchmark launch, found by a tag in their environment.

Drivers that launch a program many times check after each run that none of
its processes outlived it, and end those that did. Other drivers (a parallel
ctest runs several) launch the same executables at the same time, so a
launch's processes are told apart by FX_BENCH_LAUNCH, which the launcher
forwards to every rank like every FX_* variable, never by program name
(that killed another benchmark's ranks in the middle of its run).

    import launches                           # PYTHONPATH=bench/common
    env = launches.tagged(env, tag := launches.new_tag())
    ... run the launch with env ...
    n = launches.sweep(tag)                   # its processes still alive, killed
"""
import itertools
import os
import signal
import time

VAR = "FX_BENCH_LAUNCH"
_count = itertools.count(1)


def new_tag():
    """A tag no other launch on this machine has."""
    return f"{os.getpid()}.{next(_count)}"


def tagged(env, tag):
    return dict(env, **{VAR: tag})


def processes(tag):
    """Pids of the processes whose environment holds the tag."""
    want = f"{VAR}={tag}".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if want in f.read().split(b"\0"):
                    pids.append(int(entry))
        except OSError:
            continue  # gone, or not ours to read
    return pids


def sweep(tag, settle=0.3):
    """The launch's processes still alive `settle` s after it ended, killed;
    how many there were."""
    time.sleep(settle)
    pids = processes(tag)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(pids)
