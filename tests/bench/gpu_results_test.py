#!/usr/bin/python3
"""gpu_results.py judges every target and says `missed` where one is missed
(issue 43, item 5): on the committed bench/results/gpu.yaml (the H200 run of
2026-11-27) and on small made-up results. Standard library + PyYAML only."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "bench", "device"), os.path.join(ROOT, "bench", "common")]
import bench_results  # noqa: E402
import gpu_results  # noqa: E402


def row(ranks, mib, wait_over_copy, h2d=0.02, restore_h2d=0.0):
    return {"ranks": ranks, "mib_per_rank": mib, "staging_over_pinned": 0.999, "app_wait_over_copy": wait_over_copy,
            "pinned_h2d_s": h2d, "restore_h2d_s": restore_h2d}


class CommittedResults(unittest.TestCase):
    def setUp(self):
        out = tempfile.NamedTemporaryFile(suffix=".yaml", delete=False)
        out.close()
        self.addCleanup(os.unlink, out.name)
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "device", "gpu_results.py"), "--annotate",
                        os.path.join(ROOT, "bench", "results", "gpu.yaml"), out.name],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out.name) as f:
            self.data = yaml.safe_load(f)
        self.path = out.name

    def test_every_target_is_judged(self):
        def targets(node):
            if isinstance(node, dict):
                for k, v in node.items():
                    if str(k).startswith("target_"):
                        yield k, v
                    else:
                        yield from targets(v)
            elif isinstance(node, list):
                for v in node:
                    yield from targets(v)
        found = list(targets(self.data))
        self.assertGreater(len(found), 10)
        for k, v in found:
            self.assertIn("met", v, k)
        self.assertEqual(bench_results.check([self.path]), 0)

    def test_missed_targets_make_missed_verdicts(self):
        checks = self.data["checks"]
        # One rank waited 12.6x and 9.9x the copy (target <= 0.1): missed.
        for name in ("bench_1r_1024mib", "bench_1r_4096mib"):
            self.assertEqual(checks[name]["verdict"], "missed", name)
            self.assertEqual(checks[name]["missed"], ["target_app_wait_over_copy"])
        # Four ranks met theirs.
        for name in ("bench_4r_1024mib", "bench_4r_4096mib"):
            self.assertEqual(checks[name]["verdict"], "ok", name)
        # 1.151x and 1.042x from 2 pairs: both the ratio and the pair count miss.
        self.assertEqual(checks["overhead"]["verdict"], "missed")
        self.assertIn("[0].target_fx_over_baseline", checks["overhead"]["missed"])
        self.assertIn("[0].target_pairs", checks["overhead"]["missed"])
        self.assertEqual(checks["kill_stencil_4p2"]["verdict"], "ok")

    def test_restore_against_an_uncontended_copy(self):
        four = [r for r in self.data["device_bench"] if r["ranks"] == 4]
        for r in four:
            one = next(x for x in self.data["device_bench"] if x["ranks"] == 1 and x["mib_per_rank"] == r["mib_per_rank"])
            self.assertAlmostEqual(r["restore_h2d_over_uncontended"], r["restore_h2d_s"] / one["pinned_h2d_s"], places=3)
            self.assertTrue(r["target_restore_h2d_over_uncontended"]["met"])


class MadeUp(unittest.TestCase):
    def test_met_everywhere_is_ok_and_a_stale_missed_goes(self):
        data = {"checks": {"bench_1r_64mib": {"verdict": "missed", "missed": ["x"]}, "overhead": {"verdict": "ok"}},
                "device_bench": [row(1, 64, 0.05), row(4, 64, 0.02, restore_h2d=0.021)],
                "stencil_overhead": [{"pairs": 5, "fx_over_baseline": {"median": 1.01}}]}
        gpu_results.judge(data)
        self.assertEqual(data["checks"]["bench_1r_64mib"], {"verdict": "ok"})
        self.assertEqual(data["checks"]["overhead"], {"verdict": "ok"})
        self.assertEqual(bench_results.missed(data), [])

    def test_a_comparison_row_has_no_wait_target(self):
        # --progress app: the exchange in the app's calls, against which the
        # default's exchange thread is measured (issue 43, item 1).
        app = dict(row(4, 64, 3.0), progress="app")
        data = {"checks": {"bench_4r_64mib_app": {"verdict": "ok"}}, "device_bench": [row(4, 64, 0.02), app]}
        gpu_results.judge(data)
        self.assertEqual(gpu_results.bench_name(app), "bench_4r_64mib_app")
        self.assertNotIn("target_app_wait_over_copy", app)
        self.assertTrue(data["device_bench"][0]["target_app_wait_over_copy"]["met"])
        self.assertEqual(data["checks"]["bench_4r_64mib_app"], {"verdict": "ok"})

    def test_a_failed_check_stays_failed(self):
        data = {"checks": {"overhead": {"verdict": "failed", "code": 1}},
                "stencil_overhead": [{"pairs": 1, "fx_over_baseline": {"median": 1.5}}]}
        judged = gpu_results.judge(data)
        self.assertEqual(judged["checks"]["overhead"], {"verdict": "failed", "code": 1})

    def test_minife_overhead_is_read_and_judged_apart_from_the_stencils(self):
        # gpu_check.sh writes PREFIX_base_PAIR.out and PREFIX_fx_EVERY_PAIR.out;
        # the stencil's prefix is a suffix of minife's and must not take its files.
        logs = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, logs)
        def write(name, solve):
            with open(os.path.join(logs, name), "w") as f:
                f.write(f"timing: solve_s = {solve}\n")
        for pair in range(1, 6):
            write(f"overhead_base_{pair}.out", 8.0)
            write(f"overhead_fx_100_{pair}.out", 8.08)
            write(f"minife_overhead_base_{pair}.out", 5.0)
            write(f"minife_overhead_fx_1100_{pair}.out", 5.25)
        stencil, minife = gpu_results.overhead(logs, "overhead"), gpu_results.overhead(logs, "minife_overhead")
        self.assertEqual([(r["checkpoint_every"], r["pairs"]) for r in stencil], [(100, 5)])
        self.assertEqual([(r["checkpoint_every"], r["pairs"]) for r in minife], [(1100, 5)])
        data = {"checks": {"overhead": {"verdict": "ok"}, "minife_overhead": {"verdict": "ok"}},
                "stencil_overhead": stencil, "minife_overhead": minife}
        gpu_results.judge(data)
        self.assertEqual(data["checks"]["overhead"], {"verdict": "ok"})  # 1.01
        self.assertEqual(data["checks"]["minife_overhead"]["verdict"], "missed")  # 1.05
        self.assertEqual(data["checks"]["minife_overhead"]["missed"], ["[0].target_fx_over_baseline"])

    def test_met_must_be_a_boolean(self):
        self.assertEqual(bench_results.bad_targets({"target_x": {"op": "<=", "value": 1, "met": True}}), [])
        self.assertEqual(len(bench_results.bad_targets({"target_x": {"op": "<=", "value": 1, "met": "yes"}})), 1)
        self.assertEqual(bench_results.target("<=", 1.02, 1.151), {"op": "<=", "value": 1.02, "met": False})


if __name__ == "__main__":
    unittest.main(verbosity=1)
