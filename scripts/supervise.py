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
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import yaml

import fx_files

HERE = os.path.dirname(os.path.abspath(__file__))
# PRRTE names the daemon it lost: "Remote host: fxh2" / "Remote daemon: [...] on node fxh2".
NAMED_HOST = re.compile(r"Remote (?:host|daemon):\s*(?:\[[^\]]*\]\s*on node\s*)?([\w.-]+)")
LOST_DAEMON = ("lost communication with a remote daemon", "daemon failed to report back",
               "PRTE has lost communication", "ORTE has lost communication")


def say(msg):
    print(f"fx supervise: {msg}", file=sys.stderr, flush=True)


# Open MPI's hostfile: a host per line, then key=value words; '#' starts a comment.
HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
SLOT_KEYS = ("slots", "max_slots", "max-slots")


class HostfileError(ValueError):
    """A hostfile fx cannot use: the message names origin:line and the word."""


def parse_hostfile(text, origin):
    """[(host, "slots=N" or None)] from a hostfile's text."""
    hosts = []
    for lineno, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if not HOST_NAME.fullmatch(words[0]):
            raise HostfileError(f"{origin}:{lineno}: expected a host name, got {words[0]!r}")
        slots = None
        for w in words[1:]:
            key, eq, value = w.partition("=")
            if key not in SLOT_KEYS:
                continue
            if not eq or not re.fullmatch(r"[0-9]{1,9}", value) or int(value) < 1:
                raise HostfileError(f"{origin}:{lineno}: expected {key}=N with N >= 1, got {w!r}")
            if key == "slots":
                slots = f"slots={int(value)}"
        hosts.append((words[0], slots))
    if not hosts:
        raise HostfileError(f"{origin}: lists no host")
    return hosts


def read_hostfile(path):
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
        return parse_hostfile(text, f"'{path}'")
    except OSError as e:
        raise SystemExit(f"fx supervise: --hostfile '{path}': {e.strerror}")
    except HostfileError as e:
        raise SystemExit(f"fx supervise: --hostfile {e}")


def ssh_command():
    """The ssh Open MPI uses (FX_SSH, or plm_ssh_agent in FX_MPIEXEC_ARGS)."""
    if os.environ.get("FX_SSH"):
        return shlex.split(os.environ["FX_SSH"])
    words = shlex.split(os.environ.get("FX_MPIEXEC_ARGS", ""))
    for i, w in enumerate(words[:-1]):
        if w == "plm_ssh_agent":
            return shlex.split(words[i + 1])
    return ["ssh"]


def sweep(host, nspace, program, timeout):
    """One ssh round to a host: ends the job's leftovers there (its ranks, by
    PMIx namespace, and its node daemon, by the launcher's namespace) and
    says whether the host answered (False: lost: ssh could not connect within
    `timeout` seconds)."""
    if nspace:
        script = (
            f"ns={shlex.quote(nspace)}; "
            "for f in $(grep -lz \"^PMIX_NAMESPACE=$ns@\" /proc/[0-9]*/environ 2>/dev/null); do "
            "  p=${f#/proc/}; kill -9 ${p%/environ} 2>/dev/null; done; "
            # (a daemon srun started has the value in quotes)
            "pkill -9 -f \"ess_base_nspace .?$ns@0\" 2>/dev/null; true")
    else:  # no namespace known: the program's processes
        script = f"pkill -9 -f -- {shlex.quote(program)} 2>/dev/null; true"
    # ssh exits 255 when it cannot reach the host (refused, or no answer
    # within ConnectTimeout): lost. A host that answers is live however long
    # the sweep then takes on a loaded machine, within a bound.
    cmd = ssh_command() + ["-o", f"ConnectTimeout={max(1, round(timeout))}", host, script]
    try:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=timeout + 15).returncode != 255
    except subprocess.TimeoutExpired:
        return False


def sweep_all(hosts, nspace, program, timeout):
    """Every host at once; returns the ones that did not answer."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(hosts))) as pool:
        answered = list(pool.map(lambda h: sweep(h, nspace, program, timeout), hosts))
    return [h for h, ok in zip(hosts, answered) if not ok]


def reachable(host, timeout):
    """Whether the host's sshd accepts a TCP connection within `timeout`
    seconds (the address and port ssh would use): a lost host refuses it or
    does not answer. Milliseconds, where a whole ssh round takes a second on
    a loaded machine."""
    name, port = host, 22
    try:
        cfg = subprocess.run(ssh_command() + ["-G", host], capture_output=True, text=True, timeout=5).stdout
        for line in cfg.splitlines():
            key, _, value = line.partition(" ")
            if key == "hostname":
                name = value
            elif key == "port":
                port = int(value)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        pass
    try:
        with socket.create_connection((name, port), timeout=timeout):
            return True
    except OSError:
        return False


def probe_all(hosts, timeout):
    """Every host at once; returns the ones that are lost."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(hosts))) as pool:
        up = list(pool.map(lambda h: reachable(h, timeout), hosts))
    return [h for h, ok in zip(hosts, up) if not ok]


class Attempt:
    """One launch of the job through the launcher, watched."""

    def __init__(self, number, hosts, ranks, workdir):
        self.number = number
        self.hosts = hosts
        self.ranks = ranks  # (active, spares)
        # A start retry shares its number with the launch it repeats.
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

    def write_hostfile(self):
        with open(self.hostfile, "w") as f:
            for host, slots in self.hosts:
                f.write(f"{host} {slots or ''}\n")

    def job_info(self, key):
        """A value the launcher wrote to FX_JOB_INFO ("key=value ..."), or ""."""
        try:
            with open(self.info) as f:
                return dict(kv.split("=", 1) for kv in f.read().split() if "=" in kv).get(key, "")
        except OSError:
            return ""

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


def launcher_option(launch_args, flag, default=None):
    """The value of the launcher's option `flag` (before `--`), or `default`."""
    end = launch_args.index("--") if "--" in launch_args else len(launch_args)
    for i in range(end - 1):
        if launch_args[i] == flag:
            return launch_args[i + 1]
    return default


def with_option(launch_args, flag, value):
    """The launcher's arguments with option `flag` set to `value` (before `--`)."""
    args = list(launch_args)
    end = args.index("--") if "--" in args else len(args)
    for i in range(end - 1):
        if args[i] == flag:
            args[i + 1] = str(value)
            return args
    return [flag, str(value)] + args


def time_limit(launch_args):
    """The job's `-t` (seconds for every attempt together; FX_TIMEOUT, 600)."""
    return float(launcher_option(launch_args, "-t", os.environ.get("FX_TIMEOUT", "600")))


def program_settings(launch_args):
    """The settings an fx program prints for --fx-print-launch (loaded from
    every source, without MPI), as a dict; empty for another program (it is
    not started: only a binary that names the flag is asked)."""
    cmd = launch_args[launch_args.index("--") + 1:] if "--" in launch_args else []
    if not cmd:
        return {}
    prog = shutil.which(cmd[0]) or cmd[0]
    try:
        with open(prog, "rb") as f:
            if b"--fx-print-launch" not in f.read():
                return {}
        out = subprocess.run(cmd + ["--fx-print-launch"], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if out.returncode != 0:
        return {}  # a configuration error: the first attempt reports it
    return dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)


def shrunk_counts(n, s, hosts, gone):
    """Active ranks and spares left when the hosts at positions `gone` go:
    world rank w ran on hosts[w % len(hosts)] (--map-by node), ranks
    0..n-1 active, the next s spares."""
    lost = [w % len(hosts) in gone for w in range(n + s)]
    return n - sum(lost[:n]), s - sum(lost[n:])


def run_attempt(att, launch_args, env, watchdog):
    att.write_hostfile()
    env = dict(env, FX_HOSTFILE=att.hostfile, FX_JOB_INFO=att.info, FX_PROGRESS_FILE=att.progress,
               FX_ATTEMPT=str(att.number))
    att.t_start = time.monotonic()
    proc = subprocess.Popen([os.path.join(HERE, "launch.sh")] + launch_args, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    for pipe in (proc.stdout, proc.stderr):
        os.set_blocking(pipe.fileno(), False)
    last_progress = time.monotonic()
    seen = None
    hung = False
    lost_at = None
    while proc.poll() is None:
        time.sleep(0.05)
        drain(proc, att)
        if any(m in line for line in att.stderr_tail[-40:] for m in LOST_DAEMON):
            # Open MPI's runtime has lost a daemon and ends the job: the
            # attempt is over now (its leftovers are swept by namespace).
            lost_at = time.monotonic()
            end_launcher(proc, att)
            break
        try:
            stamp = os.stat(att.progress).st_mtime
        except OSError:
            stamp = None
        if stamp != seen:
            seen, last_progress = stamp, time.monotonic()
        if watchdog and seen is not None and time.monotonic() - last_progress > watchdog:
            hung = True
            say(f"attempt {att.number}: no progress for {watchdog:g} s (--watchdog); ending it")
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    drain(proc, att)
    att.t_end = lost_at or time.monotonic()
    att.code = proc.returncode
    att.first_step = first_step(att.progress)
    text = "\n".join(att.stderr_tail)
    if hung:
        att.reason = "no progress"
    elif any(m in text for m in LOST_DAEMON):
        att.reason = "lost daemon"
    elif att.code not in (0, 1, 2, 3, 4, 124):
        att.reason = "no verdict"
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


def first_step(progress):
    """The attempt's first step, from its progress stamp's second line:
    {iteration, at} (CLOCK_MONOTONIC seconds, like time.monotonic()), or None."""
    try:
        with open(progress) as f:
            lines = f.read().splitlines()
        iteration, at = lines[1].split()
        return {"iteration": int(iteration), "at": float(at)}
    except (OSError, IndexError, ValueError):
        return None


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


def merge_report(path, attempts, relaunches, code):
    """The last attempt's run report, with every attempt in `supervisor:`."""
    try:
        with open(path) as f:
            report = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError):
        report = {}
    report["supervisor"] = {
        "relaunches": relaunches,
        "attempts": [{
            "attempt": a.number,
            "hosts": [h for h, _ in a.hosts],
            "ranks": a.ranks[0],
            "spares": a.ranks[1],
            "exit_code": a.code,
            "ended_by": a.reason or "verdict",
            "start_retry": a.start_retry,
            "dead_hosts": a.dead,
            "seconds": {"run": round(a.t_end - a.t_start, 3), "probe": round(a.probe_s, 3)},
            # CLOCK_MONOTONIC: the launch, its end, and the first step it made.
            "started_at": round(a.t_start, 6),
            "ended_at": round(a.t_end, 6),
            "first_step": a.first_step,
        } for a in attempts],
    }
    if isinstance(report.get("exit"), dict) and relaunches > 0:
        report["exit"]["code"] = code
    fx_files.write_replacing(path, yaml.safe_dump(report, sort_keys=False))


def main():
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
    all_hosts = read_hostfile(ours.hostfile)
    if ours.spare_hosts >= len(all_hosts):
        raise SystemExit(f"fx supervise: --spare-hosts {ours.spare_hosts} leaves no host to run on "
                         f"(--hostfile '{ours.hostfile}' lists {len(all_hosts)})")
    active = all_hosts[:len(all_hosts) - ours.spare_hosts]
    spare = all_hosts[len(active):]
    program = next((a for a in launch_args if not a.startswith("-") and os.path.exists(a)), "")
    # Every attempt's host list, job info and progress; removed at exit.
    workdir = tempfile.mkdtemp(prefix="fx-supervise.")
    atexit.register(shutil.rmtree, workdir, True)
    # An fx program names its report from every source (file, FX_*, --fx-set).
    settings = program_settings(launch_args)
    report_path, report_from = next(((p, o) for p, o in (
        (settings.get("report.path"), "report.path"), (os.environ.get("FX_CFG_REPORT__PATH"), "env FX_CFG_REPORT__PATH"),
        (os.environ.get("FX_REPORT"), "env FX_REPORT")) if p), ("", ""))
    # Before any launch: the merged report never replaces what is no regular file.
    if report_path and fx_files.unusable_target(report_path):
        say(f"{report_from}: expected a writable file path, got '{report_path}' "
            f"({fx_files.unusable_target(report_path)})")
        sys.exit(2)
    ranks = (int(launcher_option(launch_args, "-n", "0")), int(launcher_option(launch_args, "-s", "0")))
    shrink = settings.get("recovery.on_exhausted") == "shrink"
    env = dict(os.environ)
    env.pop("FX_HOSTFILE", None)

    attempts = []
    start_retries = 0
    sweeps = []  # (attempt, future): leftovers ended beside the next launch
    sweeper = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    dead = set()
    t0 = time.monotonic()
    limit = time_limit(launch_args)
    while True:
        left = max(1, int(limit - (time.monotonic() - t0)))
        if attempts and time.monotonic() - t0 > limit - 1:
            say(f"time limit of {limit:g} s (-t, every attempt together) reached; giving up")
            attempts[-1].code = 124
            break
        # A start retry keeps the number of the attempt it repeats (FX_ATTEMPT:
        # injections name the launch they fire in; the log counts real ones).
        att = Attempt(len(attempts) + 1 - start_retries, active, ranks, workdir)
        att.dead, att.probe_s = [], 0.0
        attempts.append(att)
        say(f"attempt {att.number} on {' '.join(h for h, _ in active)} ({ranks[0]} active ranks + {ranks[1]} spares"
            + (f", spare hosts: {' '.join(h for h, _ in spare)})" if spare else ")"))
        args = with_option(with_option(launch_args, "-n", ranks[0]), "-s", ranks[1])
        run_attempt(att, with_option(args, "-t", left), env, ours.watchdog)
        if not att.reason and att.code != 4:
            break
        # Which hosts are gone? One parallel probe of every host's sshd (the
        # host Open MPI names too: it names only the first it lost, and a
        # daemon can fail to start on a live host). The job's leftovers on
        # the live hosts are ended by one ssh round beside the next launch
        # (which has a PMIx namespace of its own).
        hosts = [h for h, _ in active]
        named = []
        if att.reason == "lost daemon":
            named = [h for h in dict.fromkeys(NAMED_HOST.findall("\n".join(att.stderr_tail))) if h in hosts]
        t = time.monotonic()
        lost = probe_all(hosts, ours.probe_timeout)
        att.probe_s = time.monotonic() - t
        att.dead = lost
        sweeps.append((att, sweeper.submit(sweep_all, [h for h in hosts if h not in lost], att.nspace(), program,
                                           ours.probe_timeout)))
        if not lost and not att.reason:
            break  # a verdict 4 of the application's own
        dead.update(lost)
        live = [(h, s) for h, s in active if h not in dead]
        # A spare host takes a lost host's place in the list, so every rank
        # of a live host is relaunched there (--map-by node follows the
        # order) and finds its node-local image on its own host.
        replaced, gone = [], []
        for i, (h, s) in enumerate(active):
            if h not in dead:
                replaced.append((h, s))
            elif spare:
                replaced.append(spare.pop(0))
            else:
                gone.append(i)
        # No spare host for some: the live hosts take their ranks, or under
        # recovery.on_exhausted: shrink the job goes on without them.
        if gone and shrink and replaced:
            shrunk = shrunk_counts(*ranks, [h for h, _ in active], gone)
            if shrunk[0] >= 1:
                say(f"no spare host for {' '.join(active[i][0] for i in gone)}, and recovery.on_exhausted is shrink: "
                    f"{shrunk[0]} active ranks + {shrunk[1]} spares from now on (were {ranks[0]} + {ranks[1]})")
                ranks = shrunk
        say(f"attempt {att.number} ended ({att.reason or 'verdict'}, exit {att.code}) "
            f"{att.t_end - att.t_start:.2f} s after it started; "
            + (f"lost host(s): {' '.join(lost)}" if lost else "every host answers")
            + (f" ({' '.join(named)} named by Open MPI)" if named else "")
            + f"; probe of {len(hosts)} host(s): {att.probe_s * 1e3:.0f} ms")
        # A job that never made its first step on hosts that all answer did
        # not start (a daemon failed on a live host): launched again without
        # using up a relaunch, twice at most.
        if not lost and att.first_step is None and start_retries < 2:
            start_retries += 1
            att.start_retry = True
            say(f"attempt {att.number} did not start; launching it again (start retry {start_retries} of 2, "
                "not counted as a relaunch)")
        elif len(attempts) - start_retries > ours.max_relaunches:
            say(f"--max-relaunches {ours.max_relaunches} reached; giving up")
            att.code = 4
            break
        if not replaced:
            say("no live host left; giving up")
            att.code = 4
            break
        active = replaced

    for att, future in sweeps:
        silent = future.result()
        if silent:
            say(f"attempt {att.number}: host(s) {' '.join(silent)} took its probe but not the ssh sweep of its leftovers")
    for att in attempts:
        att.remove_run_dir()
    sweeper.shutdown()
    relaunches = len(attempts) - 1 - start_retries
    code = attempts[-1].code
    if relaunches and code == 0:
        code = 3
    if report_path and os.path.exists(report_path):
        try:
            merge_report(report_path, attempts, relaunches, code)
            say(f"report {report_path}: the last attempt's, with {len(attempts)} attempt(s) under supervisor:")
        except (OSError, fx_files.Refused) as e:  # replaced by something else meanwhile
            say(f"report {report_path}: not merged ({e})")
    say(f"{'finished' if code in (0, 3) else 'ended'} with exit {code} after {relaunches} relaunch(es), "
        f"{time.monotonic() - t0:.2f} s in all")
    sys.exit(code)


if __name__ == "__main__":
    main()
