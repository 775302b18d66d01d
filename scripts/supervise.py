#!/usr/bin/python3
"""fx supervisor: one job that finishes although hosts are lost.

    launch.sh --supervise [--spare-hosts K] [--max-relaunches R] [--watchdog S]
              [--probe-timeout S] --hostfile FILE -n N [-s S] [-t T] [--] program [args...]

Process failures are repaired online inside the job. A lost host is not:
Open MPI 5's runtime ends the whole job when a node daemon dies, and a host
that goes silent leaves mpiexec waiting forever. The supervisor runs the job
through the launcher on the hostfile's first hosts (the last K are spare
hosts) and, when the job ends without a verdict of its own, ends with a
lost-daemon message (it does not wait for Open MPI's teardown), or makes no
progress for the watchdog period, probes every host's sshd at once (a host
that refuses or does not answer is lost), ends every leftover process of the
job on the live hosts (one ssh round, beside the relaunch), and launches it
again with the same rank count: a spare host takes each lost host's place
in the list (so the ranks of live hosts stay where their node-local
checkpoints are), and with no spare host left the live hosts take more
ranks, or, when the program's recovery.on_exhausted is shrink (asked with
--fx-print-launch), the job goes on with the ranks the live hosts ran
(active ranks and spares alike) and the application re-decomposes its
checkpoint in resize() (DataStore::restore_resized). When every host answers, it relaunches on the same hosts (a daemon
that failed to start; when the job never made a step this is a start
retry, twice at most, not counted as a relaunch and under the same attempt
number). The application restarts from its newest complete
checkpoint (checkpoint.hdf5.restart, on by default). At most R relaunches;
-t T bounds every attempt together.

Its own lines start with "fx supervise:"; the summary counts relaunches,
and with FX_CFG_REPORT__PATH set, the final run report gains a
`supervisor:` section covering every attempt. Exit code: the last attempt's
verdict, 3 (survived failures) when it finished after relaunches.
"""
import argparse
import atexit
import concurrent.futures
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import fx_files
import hostfile_check
import supervisor_policy as policy
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))


def say(msg):
    print(f"fx supervise: {msg}", file=sys.stderr, flush=True)


def read_text(path):
    """A file's text, or None when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return f.read()
    except OSError:
        return None


def read_hostfile(path):
    """The hosts, or exit 2 (a file that cannot be read or parsed) or 1 (a
    host that does not resolve) with one line, before any launch."""
    hosts, code, line = hostfile_check.check(path, "fx supervise")
    if code:
        print(line, file=sys.stderr)
        sys.exit(code)
    return hosts


def sweep(host, nspace, job_info, timeout):
    """One ssh round to a host that ends the job's leftovers there; whether
    the host answered (False: lost: ssh could not connect within `timeout`
    seconds)."""
    # ssh exits 255 when it cannot reach the host (refused, or no answer
    # within ConnectTimeout): lost. A host that answers is live however long
    # the sweep then takes on a loaded machine, within a bound.
    cmd = policy.ssh_command(os.environ) + ["-o", f"ConnectTimeout={max(1, round(timeout))}", host,
                                            policy.sweep_script(nspace, job_info)]
    try:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=timeout + 15, check=False).returncode != 255
    except subprocess.TimeoutExpired:
        return False


def reachable(host, timeout):
    """Whether the host's sshd accepts a TCP connection within `timeout`
    seconds (the address and port ssh would use): a lost host refuses it or
    does not answer. Milliseconds, where a whole ssh round takes a second on
    a loaded machine."""
    try:
        cfg = subprocess.run(policy.ssh_command(os.environ) + ["-G", host], capture_output=True, text=True,
                             timeout=5, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        cfg = ""
    try:
        with socket.create_connection(policy.ssh_endpoint(host, cfg), timeout=timeout):
            return True
    except OSError:
        return False


def failing(hosts, check):
    """The hosts for which check(host) is false, every host at once."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(hosts))) as pool:
        ok = list(pool.map(check, hosts))
    return [h for h, good in zip(hosts, ok, strict=True) if not good]


class Attempt:
    """One launch of the job through the launcher, watched."""

    def __init__(self, number, hosts, ranks, workdir):
        self.number = number
        self.hosts = hosts
        self.ranks = ranks  # (active, spares)
        files = tempfile.mkdtemp(prefix=f"attempt{number}.", dir=workdir)
        self.hostfile = os.path.join(files, "hosts")
        self.info = os.path.join(files, "job")
        self.progress = os.path.join(files, "progress")
        self.stderr_tail = []
        self.code = None
        self.reason = ""
        self.t_start = self.t_end = 0.0
        self.first_step = None
        self.start_retry = False
        self.dead, self.probe_s = [], 0.0

    def job_info(self, key):
        """A value the launcher wrote to FX_JOB_INFO, or ""."""
        return policy.parse_job_info(read_text(self.info) or "").get(key, "")

    def mpiexec_pid(self):
        pid = self.job_info("mpiexec_pid")
        return int(pid) if pid.isdigit() else 0

    def remove_run_dir(self):
        """The launcher's directory of this attempt: it removes it when it
        ends, but a process it left on a live host can write there until
        the sweep has ended it."""
        run_dir = self.job_info("run_dir")
        if os.path.basename(run_dir).startswith("fx-run."):
            shutil.rmtree(run_dir, ignore_errors=True)

    def nspace(self):
        pid = self.mpiexec_pid()
        return f"prterun-{socket.gethostname()}-{pid}" if pid else ""

    def record(self):
        """This attempt in the report's `supervisor:` section."""
        return {
            "attempt": self.number,
            "hosts": [h for h, _ in self.hosts],
            "ranks": self.ranks[0],
            "spares": self.ranks[1],
            "exit_code": self.code,
            "ended_by": self.reason or "verdict",
            "start_retry": self.start_retry,
            "dead_hosts": self.dead,
            "seconds": {"run": round(self.t_end - self.t_start, 3), "probe": round(self.probe_s, 3)},
            # CLOCK_MONOTONIC: the launch, its end, and the first step it made.
            "started_at": round(self.t_start, 6),
            "ended_at": round(self.t_end, 6),
            "first_step": self.first_step,
        }


def program_settings(launch_args):
    """The settings an fx program prints for --fx-print-launch (loaded from
    every source, without MPI), as a dict; empty for another program (it is
    not started: only a binary that names the flag is asked)."""
    cmd = policy.program_command(launch_args)
    if not cmd:
        return {}
    prog = shutil.which(cmd[0]) or cmd[0]
    try:
        with open(prog, "rb") as f:
            if b"--fx-print-launch" not in f.read():
                return {}
        out = subprocess.run([*cmd, "--fx-print-launch"], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if out.returncode != 0:
        return {}  # a configuration error: the first attempt reports it
    return policy.parse_settings(out.stdout)


def watch(proc, att, watchdog):
    """Pass the launcher's output through until it ends, Open MPI says it
    lost a daemon (the attempt is over then: its leftovers are swept by
    namespace) or no progress was made for `watchdog` seconds. Returns
    (hung, when the lost daemon was seen or None)."""
    last_progress, seen = time.monotonic(), None
    while proc.poll() is None:
        time.sleep(0.05)
        drain(proc, att)
        if policy.lost_daemon(att.stderr_tail[-40:]):
            lost_at = time.monotonic()
            end_launcher(proc, att)
            return False, lost_at
        try:
            stamp = os.stat(att.progress).st_mtime
        except OSError:
            stamp = None
        if stamp != seen:
            seen, last_progress = stamp, time.monotonic()
        if watchdog and seen is not None and time.monotonic() - last_progress > watchdog:
            say(f"attempt {att.number}: no progress for {watchdog:g} s (--watchdog); ending it")
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            return True, None
    return False, None


def run_attempt(att, launch_args, env, watchdog):
    with open(att.hostfile, "w") as f:
        f.write(policy.hostfile_text(att.hosts))
    env = dict(env, FX_HOSTFILE=att.hostfile, FX_JOB_INFO=att.info, FX_PROGRESS_FILE=att.progress,
               FX_ATTEMPT=str(att.number))
    att.t_start = time.monotonic()
    proc = subprocess.Popen([os.path.join(HERE, "launch.sh"), *launch_args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    for pipe in (proc.stdout, proc.stderr):
        os.set_blocking(pipe.fileno(), False)
    hung, lost_at = watch(proc, att, watchdog)
    proc.wait()
    drain(proc, att)
    att.t_end = lost_at or time.monotonic()
    att.code = proc.returncode
    att.first_step = policy.parse_first_step(read_text(att.progress) or "")
    att.reason = policy.end_reason(hung, att.stderr_tail, att.code)
    return att


def end_launcher(proc, att):
    """Stop an attempt's launcher and its mpiexec (in a session of its own)."""
    pid = att.mpiexec_pid()
    for kill in ((lambda: os.kill(pid, signal.SIGKILL)) if pid else None,
                 lambda: os.killpg(proc.pid, signal.SIGTERM)):
        try:
            if kill:
                kill()
        except OSError:
            pass
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def drain(proc, att):
    """Pass the launcher's output through, keeping its tail for the cause
    (Open MPI prints some of its runtime's messages on stdout)."""
    for pipe, out in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr)):
        while True:
            try:
                chunk = os.read(pipe.fileno(), 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            out.buffer.write(chunk)
            out.flush()
            att.stderr_tail = (att.stderr_tail + chunk.decode(errors="replace").splitlines())[-200:]


def options():
    """(the supervisor's options, the launcher's arguments), checked."""
    ap = argparse.ArgumentParser(prog="fx run --supervise", add_help=False)
    ap.add_argument("--spare-hosts", type=int, default=int(os.environ.get("FX_SPARE_HOSTS", "0")))
    ap.add_argument("--max-relaunches", type=int, default=int(os.environ.get("FX_MAX_RELAUNCHES", "2")))
    ap.add_argument("--watchdog", type=float, default=float(os.environ.get("FX_WATCHDOG", "0")))
    ap.add_argument("--probe-timeout", type=float, default=2.0)
    ap.add_argument("--hostfile", default=os.environ.get("FX_HOSTFILE", ""))
    ours, launch_args = ap.parse_known_args()
    if not ours.hostfile:
        raise SystemExit("fx supervise: --supervise needs --hostfile FILE (or FX_HOSTFILE, or a Slurm allocation)")
    for name in ("spare_hosts", "max_relaunches"):
        if getattr(ours, name) < 0:
            raise SystemExit(f"fx supervise: --{name.replace('_', '-')} expects a non-negative integer, "
                             f"got {getattr(ours, name)}")
    if not ours.probe_timeout > 0:
        raise SystemExit(f"fx supervise: --probe-timeout expects seconds > 0, got {ours.probe_timeout}")
    return ours, launch_args


def report_path(settings):
    """The run report's path (an fx program names it from every source:
    file, FX_*, --fx-set), refused before any launch when it names what is
    no regular file (the merged report never replaces it)."""
    path, origin = policy.report_target(settings, os.environ)
    why = fx_files.unwritable_target(path) if path else ""
    if why:
        say(f"{origin}: expected a writable file path, got '{path}' ({why})")
        sys.exit(2)
    return path


class Supervisor:
    """The attempts of one job: launched, probed, swept and replanned."""

    def __init__(self, ours, launch_args, hosts):
        self.ours, self.launch_args = ours, launch_args
        try:
            self.active, self.spare = policy.split_hosts(hosts, ours.spare_hosts, f"--hostfile '{ours.hostfile}'")
        except policy.HostfileError as e:
            raise SystemExit(f"fx supervise: {e}") from None
        # Every attempt's host list, job info and progress; removed at exit.
        self.workdir = tempfile.mkdtemp(prefix="fx-supervise.")
        atexit.register(shutil.rmtree, self.workdir, True)
        settings = program_settings(launch_args)
        self.report = report_path(settings)
        self.shrink = settings.get("recovery.on_exhausted") == "shrink"
        self.ranks = policy.rank_counts(launch_args)
        self.env = {k: v for k, v in os.environ.items() if k != "FX_HOSTFILE"}
        self.attempts, self.start_retries, self.dead = [], 0, set()
        self.sweeps = []  # (attempt, future): leftovers ended beside the next launch
        self.sweeper = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self.t0, self.limit = time.monotonic(), policy.time_limit(launch_args, os.environ)

    def launch(self):
        """The next attempt, run to its end."""
        att = Attempt(policy.attempt_number(len(self.attempts), self.start_retries), self.active, self.ranks,
                      self.workdir)
        self.attempts.append(att)
        spare = f", spare hosts: {' '.join(h for h, _ in self.spare)})" if self.spare else ")"
        say(f"attempt {att.number} on {' '.join(h for h, _ in self.active)} ({self.ranks[0]} active ranks + "
            f"{self.ranks[1]} spares" + spare)
        args = policy.with_option(policy.with_option(self.launch_args, "-n", self.ranks[0]), "-s", self.ranks[1])
        left = max(1, int(self.limit - (time.monotonic() - self.t0)))
        return run_attempt(att, policy.with_option(args, "-t", left), self.env, self.ours.watchdog)

    def probe(self, att):
        """Which hosts are gone: one parallel probe of every host's sshd (the
        host Open MPI names too: it names only the first it lost, and a
        daemon can fail to start on a live host). The job's leftovers on the
        live hosts are ended by one ssh round beside the next launch (which
        has a PMIx namespace of its own)."""
        hosts = [h for h, _ in self.active]
        t = time.monotonic()
        lost = failing(hosts, lambda h: reachable(h, self.ours.probe_timeout))
        att.probe_s, att.dead = time.monotonic() - t, lost
        live = [h for h in hosts if h not in lost]
        self.sweeps.append((att, self.sweeper.submit(
            failing, live, lambda h: sweep(h, att.nspace(), att.info, self.ours.probe_timeout))))
        named = policy.named_hosts(att.stderr_tail, hosts) if att.reason == "lost daemon" else []
        say(f"attempt {att.number} ended ({att.reason or 'verdict'}, exit {att.code}) "
            f"{att.t_end - att.t_start:.2f} s after it started; "
            + (f"lost host(s): {' '.join(lost)}" if lost else "every host answers")
            + (f" ({' '.join(named)} named by Open MPI)" if named else "")
            + f"; probe of {len(hosts)} host(s): {att.probe_s * 1e3:.0f} ms")
        return lost

    def replan(self, lost):
        """The next attempt's hosts and rank counts; whether any host is left."""
        self.dead.update(lost)
        replaced, gone, self.spare = policy.replace_hosts(self.active, self.spare, self.dead)
        ranks = policy.next_ranks(self.ranks, self.active, gone, self.shrink)
        if ranks != self.ranks:
            say(f"no spare host for {' '.join(self.active[i][0] for i in gone)}, and recovery.on_exhausted is "
                f"shrink: {ranks[0]} active ranks + {ranks[1]} spares from now on (were {self.ranks[0]} + "
                f"{self.ranks[1]})")
            self.ranks = ranks
        if replaced:
            self.active = replaced
        return bool(replaced)

    def step(self):
        """One attempt and what follows it; False when the job is over."""
        if self.attempts and time.monotonic() - self.t0 > self.limit - 1:
            say(f"time limit of {self.limit:g} s (-t, every attempt together) reached; giving up")
            self.attempts[-1].code = 124
            return False
        att = self.launch()
        if not policy.needs_probe(att.reason, att.code):
            return False
        lost = self.probe(att)
        if policy.is_verdict(att.reason, att.code, lost):
            return False  # a verdict 4 of the application's own
        relaunches = len(self.attempts) - 1 - self.start_retries
        hosts_left = self.replan(lost)
        what = policy.after_attempt(att.reason, att.code, lost, att.first_step, self.start_retries, relaunches,
                                    self.ours.max_relaunches, hosts_left)
        if what == "start retry":
            self.start_retries += 1
            att.start_retry = True
            say(f"attempt {att.number} did not start; launching it again (start retry {self.start_retries} of "
                f"{policy.START_RETRIES}, not counted as a relaunch)")
        elif what in ("budget", "no host"):
            say(f"--max-relaunches {self.ours.max_relaunches} reached; giving up" if what == "budget"
                else "no live host left; giving up")
            att.code = 4
        return what in ("start retry", "relaunch")

    def finish(self):
        """Waits for the sweeps, merges the report, says how it ended; the exit code."""
        for att, future in self.sweeps:
            silent = future.result()
            if silent:
                say(f"attempt {att.number}: host(s) {' '.join(silent)} took its probe but not the ssh sweep "
                    "of its leftovers")
        for att in self.attempts:
            att.remove_run_dir()
        self.sweeper.shutdown()
        relaunches = len(self.attempts) - 1 - self.start_retries
        code = policy.final_code(self.attempts[-1].code, relaunches)
        if self.report and os.path.exists(self.report):
            self.merge_report(relaunches, code)
        say(f"{'finished' if code in (0, 3) else 'ended'} with exit {code} after {relaunches} relaunch(es), "
            f"{time.monotonic() - self.t0:.2f} s in all")
        return code

    def merge_report(self, relaunches, code):
        """The last attempt's run report, with every attempt in `supervisor:`."""
        try:
            report = yaml.safe_load(read_text(self.report) or "") or {}
        except yaml.YAMLError:
            report = {}
        merged = policy.merged_report(report if isinstance(report, dict) else {},
                                      [a.record() for a in self.attempts], relaunches, code)
        try:
            fx_files.write_replacing(self.report, yaml.safe_dump(merged, sort_keys=False))
            say(f"report {self.report}: the last attempt's, with {len(self.attempts)} attempt(s) under supervisor:")
        except (OSError, fx_files.Refused) as e:  # replaced by something else meanwhile
            say(f"report {self.report}: not merged ({e})")


def main():
    ours, launch_args = options()
    job = Supervisor(ours, launch_args, read_hostfile(ours.hostfile))
    while job.step():
        pass
    sys.exit(job.finish())


if __name__ == "__main__":
    main()
