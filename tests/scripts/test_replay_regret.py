#!/usr/bin/env python3
"""CPU test of scripts/replay_regret.py with a stand-in for `qsgemm plan`: the current plan's time
over the fastest line per point (promoted lines only in the default mode), tail plans matched by
their line name, untimed plans counted, the baseline's moved points, bad usage and a failing
`qsgemm` exit 2.

    python3 -m unittest discover -s tests/scripts -v      (or: ctest -L cpu -R check_cliffs_script)
"""
import contextlib
import io
import json
import os
import stat
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import replay_regret  # noqa: E402

# A stand-in for `qsgemm plan sparse24 --stdin`: plans from a table keyed by "M N K", the fast table
# with --fast-accum; exit 3 when asked for the h100 card (to test the failure path).
FAKE = r'''#!/usr/bin/env python3
import sys
PLANS = %r
FAST = %r
args = sys.argv[1:]
if args[:3] != ["plan", "sparse24", "--stdin"]:
    sys.exit(9)
if "h100" in args:
    print("no such card", file=sys.stderr)
    sys.exit(3)
table = FAST if "--fast-accum" in args else PLANS
for line in sys.stdin:
    m, n, k = line.split()
    cfg, tail, rows = table["%%s %%s %%s" %% (m, n, k)]
    print(m, n, k, cfg, 1, tail, rows, "1.00")
'''


def line(config, us, m=1024, n=8192, k=8192):
    return {"family": "sparse24", "M": m, "N": n, "K": k, "config": config, "us": us}


class ReplayRegretTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def fake(self, name, plans, fast=None):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(FAKE % (plans, fast or plans))
        os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
        return path

    def probe(self, lines):
        path = os.path.join(self.dir.name, "tune_x.jsonl")
        with open(path, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in lines)
        return path

    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = replay_regret.main(["replay_regret.py", *args])
        return rc, out.getvalue(), err.getvalue()

    def test_plan_over_fastest_promoted_line(self):
        probe = self.probe([
            # point 1024: the plan (b, 12) against the fastest promoted line (a, 10); the fast line
            # (8 us) and the whole-last line (5 us) are not candidates in the default mode
            line("a", 10.0), line("b", 12.0), line("f_fastaccum", 8.0), line("a_wholelast", 5.0),
            # point 2048: a tail plan, timed under its line name, the fastest
            line("a", 30.0, m=2048), line("a+t@64", 24.0, m=2048),
            # point 4096: the plan (c) was not timed there
            line("a", 50.0, m=4096), line("b", 40.0, m=4096),
            # a line that failed (us -1) and another family are ignored
            line("c", -1, m=4096), {"family": "blockwise", "M": 1, "N": 1, "K": 1, "config": "z", "us": 1.0},
        ])
        qs = self.fake("qsgemm", {"1024 8192 8192": ("b", "-", 0), "2048 8192 8192": ("a", "t", 64),
                                  "4096 8192 8192": ("c", "-", 0)})
        rc, out, _ = self.run_main(probe, "--qsgemm", qs)
        self.assertEqual(rc, 0, out)
        self.assertIn("3 points in 1 files, card h200, default mode", out)
        self.assertIn("geomean 1.0954, worst 1.200, over 2 points (1 with the plan untimed)", out)  # sqrt(1.2)
        self.assertIn("1.200  tune_x.jsonl M=1024 N=8192 K=8192  plan b, fastest a", out)
        # fast mode: the fast line is a candidate; the plan there is the fast one
        qf = self.fake("qsgemm_f", {"1024 8192 8192": ("b", "-", 0), "2048 8192 8192": ("a", "-", 0),
                                    "4096 8192 8192": ("b", "-", 0)},
                       {"1024 8192 8192": ("b", "-", 0), "2048 8192 8192": ("a", "-", 0),
                        "4096 8192 8192": ("b", "-", 0)})
        rc, out, _ = self.run_main(probe, "--qsgemm", qf, "--fast-accum")
        self.assertEqual(rc, 0, out)
        self.assertIn("fast_accum mode", out)
        self.assertIn("1.500  tune_x.jsonl M=1024 N=8192 K=8192  plan b, fastest f_fastaccum", out)  # 12 / 8
        self.assertIn("1.250  tune_x.jsonl M=2048 N=8192 K=8192  plan a, fastest a+t@64", out)  # 30 / 24

    def test_baseline_moved_points(self):
        probe = self.probe([line("a", 10.0), line("b", 12.0), line("a", 20.0, m=2048), line("b", 16.0, m=2048),
                            line("a", 5.0, m=512)])
        old = self.fake("old", {"1024 8192 8192": ("b", "-", 0), "2048 8192 8192": ("a", "-", 0),
                                "512 8192 8192": ("a", "-", 0)})
        new = self.fake("new", {"1024 8192 8192": ("a", "-", 0), "2048 8192 8192": ("b", "-", 0),
                                "512 8192 8192": ("x", "-", 0)})
        rc, out, _ = self.run_main(probe, "--qsgemm", new, "--baseline", old)
        self.assertEqual(rc, 0, out)
        self.assertIn("against the baseline: 3 points moved, 2 with both plans timed", out)
        self.assertIn("new plan / old plan: geomean 0.8165, 0.800-0.833, slower at 0", out)  # 10/12, 16/20

    def test_bad_usage_and_failing_qsgemm(self):
        probe = self.probe([line("a", 10.0)])
        qs = self.fake("qsgemm", {"1024 8192 8192": ("a", "-", 0)})
        self.assertEqual(self.run_main()[0], 2)
        self.assertEqual(self.run_main(probe, "--card", "h300", "--qsgemm", qs)[0], 2)
        self.assertEqual(self.run_main(probe, "--bogus")[0], 2)
        self.assertEqual(self.run_main(probe, "--worst")[0], 2)
        rc, _, err = self.run_main(probe, "--qsgemm", qs, "--card", "h100")
        self.assertEqual(rc, 2)
        self.assertIn("exit 3", err)
        rc, _, err = self.run_main(probe, "--qsgemm", os.path.join(self.dir.name, "missing"))
        self.assertEqual(rc, 2)


if __name__ == "__main__":
    unittest.main()
