#!/usr/bin/env python3
"""Idle spares' CPU time against the active ranks' (issue 42: a spare holds
a Kokkos backend's threads from start-up and must not spin them).

usage: spare_cpu.py ACTIVE MAX_PERCENT -- COMMAND...

Runs COMMAND (a launch of ACTIVE ranks plus spares, placed last) with a
marker in its environment, samples /proc every 0.1 s for the job's
processes (the marker in their environment, the world rank from
PMIX_RANK), and keeps each one's last user+system time. Start-up (MPI and
Kokkos initialisation, which a spare does too) is left out: the times
count from 1 s after every process was first seen. Fails when a spare used
more than MAX_PERCENT of the least busy active rank's time since then.
COMMAND's own exit status must be 0.
"""
import os
import subprocess
import sys
import time
import uuid

TICK = os.sysconf("SC_CLK_TCK")


def job_processes(marker):
    """{pid: world rank} of the processes whose environment holds `marker`."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if marker not in env:
            continue
        rank = next((e[len(b"PMIX_RANK="):] for e in env if e.startswith(b"PMIX_RANK=")), None)
        if rank is not None and rank.isdigit():
            found[int(pid)] = int(rank)
    return found


def cpu_seconds(pid):
    """User + system seconds of `pid` (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)


def main(argv):
    if len(argv) < 5 or argv[3] != "--":
        sys.exit(__doc__)
    active, max_percent, command = int(argv[1]), float(argv[2]), argv[4:]
    mark = f"FX_TEST_SPARE_CPU_MARK={uuid.uuid4().hex}"
    env = dict(os.environ, FX_TEST_SPARE_CPU_MARK=mark.split("=", 1)[1])
    job = subprocess.Popen(command, env=env)
    cpu = {}  # world rank -> last seconds seen
    base = None  # cpu 1 s after every process was first seen
    all_seen = None
    while job.poll() is None:
        procs = job_processes(mark.encode())
        for pid, rank in procs.items():
            seconds = cpu_seconds(pid)
            if seconds is not None:
                cpu[rank] = max(cpu.get(rank, 0.0), seconds)
        if all_seen is None and len(procs) > active:
            all_seen = time.monotonic()
        if base is None and all_seen is not None and time.monotonic() - all_seen >= 1.0:
            base = dict(cpu)
        time.sleep(0.1)
    if job.returncode != 0:
        print(f"spare_cpu: the job exited {job.returncode}", file=sys.stderr)
        return 1
    if base is None:
        print("spare_cpu: the job ended within 1 s of its start: too short to measure", file=sys.stderr)
        return 1
    cpu = {r: cpu[r] - base.get(r, 0.0) for r in cpu}
    ranks = sorted(cpu)
    busy = [cpu[r] for r in ranks if r < active]
    spares = {r: cpu[r] for r in ranks if r >= active}
    print("spare_cpu: CPU seconds by world rank after start-up: " + ", ".join(f"{r}: {cpu[r]:.2f}" for r in ranks))
    if len(busy) < active or not spares:
        print(f"spare_cpu: saw {len(busy)} of {active} active ranks and {len(spares)} spare(s)", file=sys.stderr)
        return 1
    floor = min(busy)
    worst = max(spares.values())
    percent = 100.0 * worst / floor if floor > 0 else float("inf")
    print(f"spare_cpu: the busiest spare used {percent:.2f} % of the least busy active rank's CPU time "
          f"(at most {max_percent} %)")
    return 0 if percent <= max_percent else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
