#!/usr/bin/env python3
"""CPU test of scripts/tune_regret.py: the pick's time over the fastest per point, points keyed by
family, scales, rank and group too, points without a timed pick counted, bad usage exits 2.

    python3 -m unittest discover -s tests/scripts -v      (or: ctest -L cpu -R check_cliffs_script)
"""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import tune_regret  # noqa: E402


def line(config, us, m=96, family="w4a4", pick=False, **extra):
    r = {"family": family, "M": m, "N": 14336, "K": 4096, "config": config, "us": us, **extra}
    if pick:
        r["heuristic"] = True
    return r


class TuneRegretTest(unittest.TestCase):
    def run_main(self, lines, *args):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.jsonl")
            with open(path, "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in lines)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = tune_regret.main(["tune_regret.py", path, *args])
            return rc, out.getvalue()

    def test_pick_over_fastest_per_point_and_key(self):
        lines = [
            # group 64: the pick (b, 12 us) against the fastest (a, 10 us): 1.2
            line("a", 10.0, group=64), line("b", 12.0, group=64, pick=True),
            # the same M, N, K at group 128 is another point: the pick is the fastest
            line("a", 20.0, group=128, pick=True), line("b", 25.0, group=128),
            # a failed configuration (us -1) is not the fastest
            line("a", -1, m=128, group=64), line("b", 30.0, m=128, group=64, pick=True),
        ]
        res, no_pick = tune_regret.regrets(lines)
        self.assertEqual(no_pick, 0)
        self.assertEqual(len(res), 3)
        ratios = sorted(round(pu / bu, 6) for _, _, pu, _, bu in res)
        self.assertEqual(ratios, [1.0, 1.0, 1.2])
        rc, out = self.run_main(lines)
        self.assertEqual(rc, 0)
        self.assertIn("worst 1.200, over 3 points", out)
        self.assertIn("geomean 1.063", out)  # (1.2 * 1 * 1) ** (1/3)

    def test_points_without_a_timed_pick(self):
        rc, out = self.run_main([line("a", 10.0), line("b", 11.0), line("a", 9.0, m=64, pick=True)])
        self.assertEqual(rc, 0)
        self.assertIn("1 point(s) without a timed pick", out)
        self.assertIn("over 1 points", out)

    def test_bad_usage(self):
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(tune_regret.main(["tune_regret.py"]), 2)
            self.assertEqual(tune_regret.main(["tune_regret.py", "x.jsonl", "--worst"]), 2)


if __name__ == "__main__":
    unittest.main()
