#!/usr/bin/env python3
"""Two jobs in one node-local directory (checkpoint.node.directory).

usage: node_claim.py WORKDIR LAUNCHER APP

1. Job A (2 ranks, a long run, a node-local version every commit) starts
   in WORKDIR/node and holds its claim there.
2. Job B starts in the same directory while A runs: it must end with
   exit 1 and a line naming the directory, A's job and the way out,
   (before claims, B restored A's newest version as its own, ran one
   step past its end and exited 0; its retention deleted A's versions).
3. A is killed with SIGKILL (its lock files stay; the kernel drops the
   locks); job C in the same directory must start, remove A's dead
   claims and finish with exit 0.
Every launch has a time limit; whatever is left is killed at the end.
"""
import os
import re
import signal
import subprocess
import sys
import time
import uuid

work, launcher, app = sys.argv[1:4]
node = os.path.join(work, "node")
claims = os.path.join(node, ".fx-jobs")
os.makedirs(work, exist_ok=True)
subprocess.run(["rm", "-rf", node], check=True)


MARKER = f"FX_NODE_CLAIM_TEST={uuid.uuid4()}"


def job_a_processes():
    """Job A's processes (launcher, mpiexec, ranks): the marker in their environment."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if MARKER.encode() in f.read().split(b"\0"):
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


def kill_job_a():
    for pid in job_a_processes():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def launch(spares, iterations, extra=(), marked=False):
    env = dict(os.environ, FX_CFG_CHECKPOINT__NODE__DIRECTORY=node, FX_CFG_CHECKPOINT__NODE__EVERY="1",
               FX_CFG_CHECKPOINT__MEMORY__EVERY="10")
    cmd = [launcher, "-n", "2", "-s", str(spares), "-t", "90", "--", app, "--nx", "32", "--ny", "32", "--nz", "32",
           "--iterations", str(iterations), "--progress-every", "0", *extra]
    if marked:
        env[MARKER.split("=")[0]] = MARKER.split("=")[1]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def fail(msg, out=""):
    print(out)
    print(f"node_claim: FAIL: {msg}")
    sys.exit(1)


def versions():
    return sorted(n for n in os.listdir(node) if n.startswith("iter-")) if os.path.isdir(node) else []


a = launch(0, 10**8, marked=True)
try:
    deadline = time.monotonic() + 60
    while len(versions()) < 2:
        if a.poll() is not None or time.monotonic() > deadline:
            fail(f"job A did not start writing versions (exit {a.poll()})", a.stdout.read() if a.poll() else "")
        time.sleep(0.1)
    a_claims = sorted(os.listdir(claims)) if os.path.isdir(claims) else ["(no claim)"]
    a_job = re.sub(r"-[A-Za-z0-9]{6}\.lock$", "", a_claims[0])

    b = launch(1, 20)
    out, _ = b.communicate(timeout=120)
    want = (rf"checkpoint\.node\.directory '{re.escape(node)}' is in use by another running job "
            rf"\({re.escape(a_job)}; its lock files are in {re.escape(claims)}\): two jobs in one directory "
            r"delete each other's versions; give each job a directory of its own, e\.g\. "
            rf"FX_CFG_CHECKPOINT__NODE__DIRECTORY={re.escape(node)}/\$SLURM_JOB_ID")
    if b.returncode != 1 or not re.search(want, out):
        fail(f"job B exited with {b.returncode}, expected 1 and /{want}/", out)
    print(f"node_claim: job B refused as expected: {re.search(want, out).group(0)[:120]}...")

    # The whole of A dies at once, as on a node that goes down.
    kill_job_a()
    a.wait()
    deadline = time.monotonic() + 30
    while job_a_processes():
        if time.monotonic() > deadline:
            fail("job A's processes did not end after SIGKILL")
        kill_job_a()
        time.sleep(0.1)
    if not any(n.startswith(a_job) for n in os.listdir(claims)):
        fail(f"job A's lock files went with it: {os.listdir(claims)} (the test needs dead claims)")

    c = launch(1, 20, ["--fx-set", "checkpoint.hdf5.restart=false"])
    out, _ = c.communicate(timeout=120)
    if c.returncode != 0:
        fail(f"job C exited with {c.returncode} after A was killed, expected 0", out)
    left = [n for n in os.listdir(claims) if n.startswith(a_job)]
    if left:
        fail(f"job A's dead claims are still there: {left}", out)
    print("node_claim: job C started after A's death and removed its dead claims")
finally:
    kill_job_a()
