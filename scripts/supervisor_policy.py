"""The fx supervisor's policy, as pure functions: no processes, files,
clocks or environment of their own. supervise.py wires them to the
launcher, ssh and the report; tests/supervisor/test_policy.py checks them
(pytest, no root, no MPI).

Slurm node lists are expanded by Slurm's own `scontrol show hostnames`
(launch.sh), so there is no nodelist parser here.
"""

import re
import shlex

# Open MPI's hostfile: a host per line, then key=value words; '#' starts a comment.
HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
SLOT_KEYS = ("slots", "max_slots", "max-slots")
# PRRTE names the daemon it lost: "Remote host: fxh2" / "Remote daemon: [...] on node fxh2".
NAMED_HOST = re.compile(r"Remote (?:host|daemon):\s*(?:\[[^\]]*\]\s*on node\s*)?([\w.-]+)")
LOST_DAEMON = ("lost communication with a remote daemon", "daemon failed to report back",
               "PRTE has lost communication", "ORTE has lost communication")
# Exit codes that are a verdict of fx's launcher (anything else: no verdict).
VERDICTS = (0, 1, 2, 3, 4, 124)
START_RETRIES = 2  # launches of a job that never started, not counted as relaunches


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


def hostfile_text(hosts):
    """The hostfile an attempt runs on: one "host [slots=N]" line each."""
    return "".join(f"{host} {slots or ''}\n" for host, slots in hosts)


def split_hosts(hosts, spare_hosts, origin):
    """(active, spare): the last `spare_hosts` hosts are spare hosts."""
    if spare_hosts >= len(hosts):
        raise HostfileError(f"--spare-hosts {spare_hosts} leaves no host to run on ({origin} lists {len(hosts)})")
    return hosts[:len(hosts) - spare_hosts], hosts[len(hosts) - spare_hosts:]


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
    return [flag, str(value), *args]


def time_limit(launch_args, env):
    """The job's `-t` (seconds for every attempt together; FX_TIMEOUT, 600)."""
    return float(launcher_option(launch_args, "-t", env.get("FX_TIMEOUT", "600")))


def rank_counts(launch_args):
    """(active ranks, spares) the launcher is asked for."""
    return int(launcher_option(launch_args, "-n", "0")), int(launcher_option(launch_args, "-s", "0"))


def program_command(launch_args):
    """The program and its arguments (after `--`), or []."""
    return launch_args[launch_args.index("--") + 1:] if "--" in launch_args else []


def parse_settings(text):
    """An fx program's --fx-print-launch output ("key value" lines) as a dict."""
    return dict(line.split(" ", 1) for line in text.splitlines() if " " in line)


def report_target(settings, env):
    """(path, where it was named) of the run report, or ("", "")."""
    named = ((settings.get("report.path"), "report.path"),
             (env.get("FX_CFG_REPORT__PATH"), "env FX_CFG_REPORT__PATH"),
             (env.get("FX_REPORT"), "env FX_REPORT"))
    return next(((p, o) for p, o in named if p), ("", ""))


def parse_job_info(text):
    """The launcher's FX_JOB_INFO ("key=value ...") as a dict."""
    return dict(kv.split("=", 1) for kv in text.split() if "=" in kv)


def parse_first_step(text):
    """The first step from a progress stamp's second line "iteration at"
    (CLOCK_MONOTONIC seconds) as {iteration, at}, or None."""
    try:
        iteration, at = text.splitlines()[1].split()
        return {"iteration": int(iteration), "at": float(at)}
    except (IndexError, ValueError):
        return None


def lost_daemon(lines):
    """Whether Open MPI's runtime says it lost a daemon (and ends the job)."""
    return any(m in line for line in lines for m in LOST_DAEMON)


def named_hosts(lines, hosts):
    """The hosts among `hosts` Open MPI names as lost, first mention first."""
    return [h for h in dict.fromkeys(NAMED_HOST.findall("\n".join(lines))) if h in hosts]


def end_reason(hung, lines, code):
    """Why an attempt ended without a verdict of its own, or "" (a verdict)."""
    if hung:
        return "no progress"
    if lost_daemon(lines):
        return "lost daemon"
    if code not in VERDICTS:
        return "no verdict"
    return ""


def ssh_command(env):
    """The ssh Open MPI uses (FX_SSH, or plm_ssh_agent in FX_MPIEXEC_ARGS)."""
    if env.get("FX_SSH"):
        return shlex.split(env["FX_SSH"])
    words = shlex.split(env.get("FX_MPIEXEC_ARGS", ""))
    for i, w in enumerate(words[:-1]):
        if w == "plm_ssh_agent":
            return shlex.split(words[i + 1])
    return ["ssh"]


def ssh_endpoint(host, ssh_g_output):
    """(address, port) ssh would connect to for `host`, from `ssh -G host`."""
    name, port = host, 22
    for line in ssh_g_output.splitlines():
        key, _, value = line.partition(" ")
        if key == "hostname":
            name = value
        elif key == "port" and value.isdigit():
            port = int(value)
    return name, port


def sweep_script(nspace, job_info):
    """The shell line that ends a job's leftovers on a host: its ranks by
    PMIx namespace and its node daemon by the launcher's namespace, or,
    with no namespace known, the processes of this attempt (the launcher
    hands its FX_JOB_INFO path to every rank): never another job's."""
    if not nspace:
        return (f"v={shlex.quote('FX_JOB_INFO=' + job_info)}; "
                "for f in $(grep -lzx -- \"$v\" /proc/[0-9]*/environ 2>/dev/null); do "
                "  p=${f#/proc/}; kill -9 ${p%/environ} 2>/dev/null; done; true")
    return (f"ns={shlex.quote(nspace)}; "
            "for f in $(grep -lz \"^PMIX_NAMESPACE=$ns@\" /proc/[0-9]*/environ 2>/dev/null); do "
            "  p=${f#/proc/}; kill -9 ${p%/environ} 2>/dev/null; done; "
            # (a daemon srun started has the value in quotes)
            "pkill -9 -f \"ess_base_nspace .?$ns@0\" 2>/dev/null; true")


def shrunk_counts(n, s, hosts, gone):
    """Active ranks and spares left when the hosts at positions `gone` go:
    world rank w ran on hosts[w % len(hosts)] (--map-by node), ranks
    0..n-1 active, the next s spares."""
    lost = [w % len(hosts) in gone for w in range(n + s)]
    return n - sum(lost[:n]), s - sum(lost[n:])


def replace_hosts(active, spare, dead):
    """(hosts of the next attempt, positions left without a host, spare
    hosts left). A spare host takes a lost host's place in the list, so
    every rank of a live host is relaunched there (--map-by node follows
    the order) and finds its node-local image on its own host."""
    spare = list(spare)
    replaced, gone = [], []
    for i, (host, slots) in enumerate(active):
        if host not in dead:
            replaced.append((host, slots))
        elif spare:
            replaced.append(spare.pop(0))
        else:
            gone.append(i)
    return replaced, gone, spare


def next_ranks(ranks, active, gone, shrink):
    """(active ranks, spares) of the next attempt: unchanged when every
    position has a host or the job does not shrink (the live hosts take
    more ranks); under recovery.on_exhausted: shrink, without the ranks of
    the positions in `gone`, while at least one active rank is left."""
    if not gone or not shrink or len(gone) == len(active):
        return ranks
    shrunk = shrunk_counts(*ranks, [h for h, _ in active], gone)
    return shrunk if shrunk[0] >= 1 else ranks


def attempt_number(launches, start_retries):
    """The number of the next launch: a start retry keeps the number of the
    attempt it repeats (FX_ATTEMPT: injections name the launch they fire in)."""
    return launches + 1 - start_retries


def needs_probe(reason, code):
    """Whether an attempt's hosts are probed: it ended without a verdict
    (`reason`), or with verdict 4, which a lost host may have caused."""
    return bool(reason) or code == 4


def is_verdict(reason, code, lost):
    """The attempt's verdict is the job's: it had one, and it was not a 4
    on hosts of which some were lost (`lost`: those the probe found gone)."""
    return not reason and (code != 4 or not lost)


def after_attempt(reason, code, lost, first_step, start_retries, relaunches, max_relaunches, hosts_left):
    """What follows an attempt whose hosts were probed (`lost`: those that
    did not answer): "verdict" (it is the job's), "start retry" (it never
    made a step on hosts that all answer: launched again, not counted),
    "relaunch", "budget" (--max-relaunches spent) or "no host" (none left).
    `relaunches`: the relaunches made so far, this attempt's not counted."""
    if is_verdict(reason, code, lost):
        return "verdict"
    if not lost and first_step is None and start_retries < START_RETRIES:
        return "start retry" if hosts_left else "no host"
    if relaunches + 1 > max_relaunches:
        return "budget"
    return "relaunch" if hosts_left else "no host"


def final_code(code, relaunches):
    """The supervisor's exit: the last attempt's verdict, 3 (survived
    failures) when it finished after relaunches."""
    return 3 if relaunches and code == 0 else code


def merged_report(report, attempts, relaunches, code):
    """The last attempt's run report (a dict, maybe empty) with every
    attempt (dicts) in `supervisor:`; its exit code becomes the
    supervisor's when there were relaunches."""
    merged = dict(report)
    merged["supervisor"] = {"relaunches": relaunches, "attempts": list(attempts)}
    if isinstance(merged.get("exit"), dict) and relaunches > 0:
        merged["exit"] = dict(merged["exit"], code=code)
    return merged
