#!/usr/bin/env python3
"""CPU test of scripts/splice_bench.py: rows replaced in place by point, the new / old report, the
note appended, BASE's layout kept byte for byte, and the refusals (another device, another timing,
a point BASE lacks without --add, a point timed twice, bad usage) exit 2 and write nothing.

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

import splice_bench  # noqa: E402


def row(m, us, layer="l3-8b.qkv", family="sparse24", timing="graph", **extra):
    return {"family": family, "layer": layer, "M": m, "N": 6144, "K": 4096, "out_dtype": "bf16",
            "config": f"cfg{m}", "qsgemm_us": us, "baselines_us": {"cublaslt_fp8_rowwise": 2 * us},
            "timing": timing, **extra}


def doc(rows, commit="aaaaaaa", device="NVIDIA H200", **extra):
    return {"device": device, "sms": 132, "cuda": "13.0", "git_commit": commit, "date": "2026-12-05T00:00:00Z",
            "copy_bandwidth_GBps": 4236.27, **extra, "rows": rows}


class SpliceBenchTest(unittest.TestCase):
    def run_main(self, base_text, news, *args):
        """(exit status, stdout, BASE's text afterwards)."""
        with tempfile.TemporaryDirectory() as d:
            base = os.path.join(d, "base.json")
            with open(base, "w") as f:
                f.write(base_text)
            paths = []
            for i, n in enumerate(news):
                paths.append(os.path.join(d, f"new{i}.json"))
                with open(paths[-1], "w") as f:
                    json.dump(n, f)
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = splice_bench.main(["splice_bench.py", base, *paths, *args])
            with open(base) as f:
                return rc, out.getvalue() + err.getvalue(), f.read()

    def test_replaces_in_place_and_reports_new_over_old(self):
        base = doc([row(1, 10.0), row(2, 20.0), row(4, 40.0), row(2, 30.0, layer="l3-70b.down")])
        new = doc([row(2, 18.0), row(2, 33.0, layer="l3-70b.down")], commit="bbbbbbb")
        rc, out, text = self.run_main(splice_bench.dump(base), [new], "--note", "M = 2 re-run")
        self.assertEqual(rc, 0, out)
        got = json.loads(text)
        self.assertEqual([(r["layer"], r["M"], r["qsgemm_us"]) for r in got["rows"]],
                         [("l3-8b.qkv", 1, 10.0), ("l3-8b.qkv", 2, 18.0), ("l3-8b.qkv", 4, 40.0),
                          ("l3-70b.down", 2, 33.0)])
        self.assertEqual(got["git_commit"], "aaaaaaa")  # the run most rows come from
        self.assertIn("M = 2 re-run", got["spliced"])
        self.assertIn("bbbbbbb", got["spliced"])
        # 18/20 = 0.9 and 33/30 = 1.1: geomean 0.995, fastest 0.900, slowest 1.100.
        self.assertIn("sparse24: 2 rows replaced, qsgemm new/old geomean 0.995", out)
        self.assertIn("fastest 0.900 (l3-8b.qkv M=2)", out)
        self.assertIn("slowest 1.100 (l3-70b.down M=2)", out)

    def test_earlier_note_is_kept(self):
        base = doc([row(1, 10.0)], spliced="first splice.")
        rc, _, text = self.run_main(splice_bench.dump(base), [doc([row(1, 9.0)])], "--note", "second")
        self.assertEqual(rc, 0)
        self.assertTrue(json.loads(text)["spliced"].startswith("first splice. second: rows from the run of"))

    def test_keeps_the_layout_of_base(self):
        base = doc([row(1, 10.0), row(2, 20.0)])
        for text in (splice_bench.dump(base), json.dumps(base, indent=1) + "\n"):
            rc, _, after = self.run_main(text, [doc([row(2, 21.0)])], "--note", "n")
            self.assertEqual(rc, 0)
            # Without the new "spliced" line, only the replaced row's values differ (21.0, and its
            # baseline 42.0), line for line.
            before_lines = text.splitlines()
            after_lines = [l for l in after.splitlines() if '"spliced"' not in l]
            self.assertEqual(len(after_lines), len(before_lines))
            changed = [b for a, b in zip(before_lines, after_lines) if a != b]
            self.assertTrue(changed)
            for line in changed:
                self.assertTrue("21.0" in line or "42.0" in line, line)

    def test_bench_layout_round_trips(self):
        text = splice_bench.dump(doc([row(1, 10.0), row(2, 20.0)]))
        self.assertEqual(splice_bench.dump(json.loads(text)), text)
        self.assertTrue(text.startswith('{\n  "device": "NVIDIA H200", "sms": 132, "cuda": "13.0",\n'))

    def test_refusals_write_nothing(self):
        base = doc([row(1, 10.0), row(2, 20.0)])
        text = splice_bench.dump(base)
        cases = {
            "another device": [doc([row(2, 18.0)], device="NVIDIA H100 80GB HBM3")],
            "another timing": [doc([row(2, 18.0, timing="events")])],
            "a point BASE lacks": [doc([row(3, 30.0)])],
            "two rows of one point": [doc([row(2, 18.0), row(2, 19.0)])],
            "one point in two runs": [doc([row(2, 18.0)]), doc([row(2, 19.0)])],
        }
        for what, news in cases.items():
            with self.subTest(what):
                rc, out, after = self.run_main(text, news, "--note", "n")
                self.assertEqual(rc, 2, what)
                self.assertIn("nothing written", out)
                self.assertEqual(after, text)

    def test_add_appends_a_new_point(self):
        base = doc([row(1, 10.0)])
        rc, out, text = self.run_main(splice_bench.dump(base), [doc([row(3, 30.0)])], "--note", "n", "--add")
        self.assertEqual(rc, 0)
        self.assertEqual([r["M"] for r in json.loads(text)["rows"]], [1, 3])
        self.assertIn("1 rows added", out)

    def test_points_differ_by_family_rank_group_and_ld(self):
        base = doc([row(1, 10.0, family="w4a4_lowrank", rank=0, group=64),
                    row(1, 12.0, family="w4a4_lowrank", rank=64, group=64)])
        rc, _, text = self.run_main(splice_bench.dump(base), [doc([row(1, 11.0, family="w4a4_lowrank", rank=64,
                                                                             group=64)])], "--note", "n")
        self.assertEqual(rc, 0)
        self.assertEqual([r["qsgemm_us"] for r in json.loads(text)["rows"]], [10.0, 11.0])

    def test_equal_ratios_over_unlike_points(self):
        # Two points re-timed at the same ratio whose keys hold None and a number (ld) must not be
        # compared with each other.
        base = doc([row(1, 10.0), row(1, 10.0, ld=4224)])
        new = doc([row(1, 10.0), row(1, 10.0, ld=4224)])
        rc, out, _ = self.run_main(splice_bench.dump(base), [new], "--note", "n")
        self.assertEqual(rc, 0, out)
        self.assertIn("2 rows replaced, qsgemm new/old geomean 1.000", out)

    def test_bad_usage_exits_2(self):
        base = splice_bench.dump(doc([row(1, 10.0)]))
        for args in ([], ["--note"], ["--bogus", "--note", "n"]):
            with self.subTest(args=args):
                rc, _, after = self.run_main(base, [doc([row(1, 9.0)])], *args)
                self.assertEqual(rc, 2)
                self.assertEqual(after, base)


if __name__ == "__main__":
    unittest.main()
