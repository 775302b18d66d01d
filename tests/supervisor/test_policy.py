"""The supervisor's policy (scripts/supervisor_policy.py): pytest, no root,
no MPI, no processes. The multihost tests run the wired program."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import supervisor_policy as p

H = [("h1", None), ("h2", "slots=2"), ("h3", None)]


class TestHostfile:
    def test_hosts_slots_and_comments(self):
        text = "# cluster\nh1\nh2 slots=2 max_slots=4  # two\n\n h3 max-slots=1\n"
        assert p.parse_hostfile(text, "f") == [("h1", None), ("h2", "slots=2"), ("h3", None)]

    def test_other_keys_are_passed_over(self):
        assert p.parse_hostfile("h1 foo=bar slots=007\n", "f") == [("h1", "slots=7")]

    @pytest.mark.parametrize("text, where, word", [
        ("h1\n-bad\n", "f:2", "'-bad'"),
        ("h1 slots=0\n", "f:1", "'slots=0'"),
        ("h1 slots\n", "f:1", "'slots'"),
        ("h1 max_slots=x\n", "f:1", "'max_slots=x'"),
        ("h1 slots=1234567890\n", "f:1", "'slots=1234567890'"),
    ])
    def test_errors_name_origin_line_and_word(self, text, where, word):
        with pytest.raises(p.HostfileError) as e:
            p.parse_hostfile(text, "f")
        assert str(e.value).startswith(where + ": ") and word in str(e.value)

    def test_empty(self):
        with pytest.raises(p.HostfileError, match="^f: lists no host$"):
            p.parse_hostfile("# nothing\n\n", "f")

    def test_round_trip(self):
        assert p.parse_hostfile(p.hostfile_text(H), "f") == H

    def test_split_hosts(self):
        assert p.split_hosts(H, 1, "o") == (H[:2], H[2:])
        assert p.split_hosts(H, 0, "o") == (H, [])
        with pytest.raises(p.HostfileError, match=r"--spare-hosts 3 leaves no host to run on \(o lists 3\)"):
            p.split_hosts(H, 3, "o")


class TestLauncherArguments:
    ARGS = ["-n", "4", "-s", "2", "--", "prog", "-n", "9"]

    def test_option_before_the_program_only(self):
        assert p.launcher_option(self.ARGS, "-n") == "4"
        assert p.launcher_option(self.ARGS, "-t", "x") == "x"
        assert p.launcher_option(["--", "prog", "-t", "5"], "-t") is None

    def test_with_option_replaces_or_prepends(self):
        assert p.with_option(self.ARGS, "-n", 3)[:2] == ["-n", "3"]
        assert p.with_option(self.ARGS, "-t", 10) == ["-t", "10", *self.ARGS]
        assert p.with_option(self.ARGS, "-n", 3)[-1] == "9"  # the program's own -n is untouched

    def test_counts_limit_and_command(self):
        assert p.rank_counts(self.ARGS) == (4, 2)
        assert p.rank_counts(["--", "prog"]) == (0, 0)
        assert p.time_limit(self.ARGS, {}) == 600.0
        assert p.time_limit(self.ARGS, {"FX_TIMEOUT": "30"}) == 30.0
        assert p.time_limit(["-t", "5", *self.ARGS], {"FX_TIMEOUT": "30"}) == 5.0
        assert p.program_command(self.ARGS) == ["prog", "-n", "9"]
        assert p.program_command(["-n", "2"]) == []


class TestSettingsAndReport:
    def test_parse_settings(self):
        assert p.parse_settings("report.path /tmp/r y\nrecovery.on_exhausted shrink\nnoise\n") == {
            "report.path": "/tmp/r y", "recovery.on_exhausted": "shrink"}

    def test_report_target_order(self):
        env = {"FX_CFG_REPORT__PATH": "b", "FX_REPORT": "c"}
        assert p.report_target({"report.path": "a"}, env) == ("a", "report.path")
        assert p.report_target({}, env) == ("b", "env FX_CFG_REPORT__PATH")
        assert p.report_target({}, {"FX_REPORT": "c"}) == ("c", "env FX_REPORT")
        assert p.report_target({"report.path": ""}, {}) == ("", "")

    def test_merged_report(self):
        attempts = [{"attempt": 1}, {"attempt": 2}]
        report = {"exit": {"code": 0, "verdict": "success"}, "ranks": 4}
        merged = p.merged_report(report, attempts, 1, 3)
        assert merged["exit"] == {"code": 3, "verdict": "success"} and merged["ranks"] == 4
        assert merged["supervisor"] == {"relaunches": 1, "attempts": attempts}
        assert report["exit"]["code"] == 0  # the input is not changed
        assert p.merged_report(report, attempts[:1], 0, 0)["exit"]["code"] == 0
        assert p.merged_report({}, [], 1, 3) == {"supervisor": {"relaunches": 1, "attempts": []}}


class TestLauncherFiles:
    def test_job_info(self):
        assert p.parse_job_info("mpiexec_pid=12 run_dir=/tmp/fx-run.x=y junk\n") == {
            "mpiexec_pid": "12", "run_dir": "/tmp/fx-run.x=y"}

    @pytest.mark.parametrize("text, step", [
        ("123.0\n40 5.25\n", {"iteration": 40, "at": 5.25}),
        ("123.0\n", None), ("", None), ("1\nx 2\n", None), ("1\n1 2 3\n", None)])
    def test_first_step(self, text, step):
        assert p.parse_first_step(text) == step


class TestEndOfAnAttempt:
    LOST = ["PRTE has lost communication with a remote daemon.", "  Remote host: fxh2", "Remote daemon: "
            "[prterun-x@1] on node fxh3", "Remote host: fxh2", "Remote host: other"]

    def test_lost_daemon_and_named_hosts(self):
        assert p.lost_daemon(self.LOST) and not p.lost_daemon(["fine"])
        assert p.named_hosts(self.LOST, ["fxh1", "fxh2", "fxh3"]) == ["fxh2", "fxh3"]

    @pytest.mark.parametrize("hung, lines, code, reason", [
        (True, [], 0, "no progress"), (False, LOST, 1, "lost daemon"), (False, [], 134, "no verdict"),
        (False, [], -9, "no verdict"), (False, [], 3, ""), (False, [], 124, ""), (False, [], 4, "")])
    def test_end_reason(self, hung, lines, code, reason):
        assert p.end_reason(hung, lines, code) == reason


class TestSsh:
    def test_ssh_command(self):
        assert p.ssh_command({}) == ["ssh"]
        assert p.ssh_command({"FX_SSH": "ssh -F 'my cfg'"}) == ["ssh", "-F", "my cfg"]
        args = "--mca plm_ssh_agent 'ip netns exec n ssh' --oversubscribe"
        assert p.ssh_command({"FX_MPIEXEC_ARGS": args}) == ["ip", "netns", "exec", "n", "ssh"]

    def test_ssh_endpoint(self):
        assert p.ssh_endpoint("h", "user root\nhostname 10.0.0.2\nport 2222\n") == ("10.0.0.2", 2222)
        assert p.ssh_endpoint("h", "") == ("h", 22)
        assert p.ssh_endpoint("h", "port x\n") == ("h", 22)

    def test_sweep_script_quotes(self):
        assert "ns=prterun-a-1;" in p.sweep_script("prterun-a-1", "/j")
        # No namespace: this attempt's processes only (their FX_JOB_INFO), never a program name.
        script = p.sweep_script("", "/tmp/fx-supervise.x/attempt1.y/job")
        assert script.startswith("v=FX_JOB_INFO=/tmp/fx-supervise.x/attempt1.y/job; ") and "pkill" not in script
        assert "'FX_JOB_INFO=/a b'" in p.sweep_script("", "/a b")


class TestHostsAndRanks:
    def test_spare_takes_the_lost_place(self):
        assert p.replace_hosts(H, [("s1", None)], {"h2"}) == ([("h1", None), ("s1", None), ("h3", None)], [], [])

    def test_spares_in_order_then_gone(self):
        spare = [("s1", None)]
        assert p.replace_hosts(H, spare, {"h1", "h3"}) == ([("s1", None), ("h2", "slots=2")], [2], [])
        assert spare == [("s1", None)]  # the input is not changed

    def test_every_host_gone(self):
        assert p.replace_hosts(H, [], {"h1", "h2", "h3"}) == ([], [0, 1, 2], [])

    def test_shrunk_counts_by_node_mapping(self):
        # 4 active + 2 spares over 3 hosts: h1 has ranks 0, 3; h2 1, 4(spare); h3 2, 5(spare).
        assert p.shrunk_counts(4, 2, ["h1", "h2", "h3"], [0]) == (2, 2)
        assert p.shrunk_counts(4, 2, ["h1", "h2", "h3"], [1]) == (3, 1)
        assert p.shrunk_counts(4, 2, ["h1", "h2", "h3"], [1, 2]) == (2, 0)

    def test_next_ranks(self):
        assert p.next_ranks((4, 2), H, [1], True) == (3, 1)
        assert p.next_ranks((4, 2), H, [1], False) == (4, 2)  # live hosts take more ranks
        assert p.next_ranks((4, 2), H, [], True) == (4, 2)
        assert p.next_ranks((4, 2), H, [0, 1, 2], True) == (4, 2)  # nothing left to run on
        assert p.next_ranks((1, 0), H, [0], True) == (1, 0)  # no active rank would be left


class TestAttempts:
    def test_numbers_and_final_code(self):
        assert p.attempt_number(0, 0) == 1
        assert p.attempt_number(2, 1) == 2  # a start retry keeps the number it repeats
        assert p.final_code(0, 1) == 3 and p.final_code(0, 0) == 0 and p.final_code(4, 2) == 4

    @pytest.mark.parametrize("reason, code, lost, first, retries, relaunches, budget, left, what", [
        ("", 4, [], None, 0, 0, 2, True, "verdict"),  # the application's own verdict 4
        ("", 0, [], None, 0, 0, 2, True, "verdict"),
        ("lost daemon", 1, ["h2"], {"iteration": 1}, 0, 0, 2, True, "relaunch"),
        ("", 4, ["h2"], {"iteration": 1}, 0, 0, 2, True, "relaunch"),
        ("lost daemon", 1, ["h2"], {"iteration": 1}, 0, 2, 2, True, "budget"),
        ("lost daemon", 1, ["h2"], None, 0, 0, 0, True, "budget"),  # a lost host is no start retry
        ("lost daemon", 1, ["h1", "h2", "h3"], None, 0, 0, 2, False, "no host"),
        ("no verdict", 134, [], None, 0, 0, 0, True, "start retry"),
        ("no verdict", 134, [], None, 1, 0, 0, True, "start retry"),
        ("no verdict", 134, [], None, 2, 0, 0, True, "budget"),  # two start retries at most
        ("no verdict", 134, [], None, 2, 0, 1, True, "relaunch"),
        ("no progress", 143, [], {"iteration": 3}, 0, 0, 1, True, "relaunch"),
    ])
    def test_after_attempt(self, reason, code, lost, first, retries, relaunches, budget, left, what):
        assert p.after_attempt(reason, code, lost, first, retries, relaunches, budget, left) == what
        # The supervisor probes every attempt whose outcome needs it, and stops at a verdict.
        assert p.needs_probe(reason, code) or what == "verdict"
        assert p.is_verdict(reason, code, lost) == (what == "verdict")

    def test_probe_only_without_a_verdict_or_on_4(self):
        assert not p.needs_probe("", 0) and not p.needs_probe("", 3) and not p.needs_probe("", 124)
        assert p.needs_probe("", 4) and p.needs_probe("lost daemon", 1) and p.needs_probe("no verdict", 0)
