#!/usr/bin/env python3
"""CPU test of scripts/band_report.py: CUTLASS's padded tile counts as the C++ test
Sparse24Heuristic.FittedBand has them, the rules' picks and summary on planted timings, and bad
usage exiting 2.

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

import band_report  # noqa: E402

FAST_C2 = "128x256x128_c2x1_coop_fastaccum"
WIDE = "128x192x256_c1x1_coop"


class BandReportTest(unittest.TestCase):
    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = band_report.main(["band_report.py"] + list(args))
        return rc, out.getvalue(), err.getvalue()

    def write(self, rows):
        f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
        self.addCleanup(os.unlink, f.name)
        for r in rows:
            f.write(json.dumps(r) + "\n")
        f.close()
        return f.name

    def test_scheduled_tiles_as_the_cpp_test(self):
        self.assertEqual(band_report.scheduled_tiles(FAST_C2, 4445, 10240, 4), 80 * 20)
        self.assertEqual(band_report.scheduled_tiles(FAST_C2, 4445, 10240, 2), 80 * 18)
        self.assertEqual(band_report.scheduled_tiles(FAST_C2, 4445, 10240, 1), 80 * 18)
        self.assertEqual(band_report.scheduled_tiles(FAST_C2, 4096, 2560, 4), 24 * 16)
        self.assertEqual(band_report.scheduled_tiles(FAST_C2, 4096, 2560, 2), 20 * 16)
        self.assertEqual(band_report.fewest_waves(FAST_C2, 4445, 10240, 132, (4, 2, 1)), 2)
        self.assertEqual(band_report.fewest_waves(FAST_C2, 4890, 10240, 132, (4, 2, 1)), 4)
        self.assertEqual(band_report.fewest_waves(WIDE, 2048, 10240, 132, (4, 2, 1)), 1)
        self.assertEqual(band_report.fewest_waves(WIDE, 2048, 10240, 132, (4, 2)), 4)
        # Blockwise: CUTLASS's M is the tokens (Blockwise.FittedBand in the C++ tests).
        sq, c12 = "128x128x128_c1x1_coop", "128x128x128_c1x2_coop"
        self.assertEqual(band_report.scheduled_tiles(sq, 2074, 8192, 4, "blockwise"), 20 * 64)
        self.assertEqual(band_report.scheduled_tiles(sq, 2074, 8192, 2, "blockwise"), 18 * 64)
        self.assertEqual(band_report.scheduled_tiles(sq, 2074, 8192, 1, "blockwise"), 17 * 64)
        self.assertEqual(band_report.scheduled_tiles(c12, 4096, 4100, 4, "blockwise"), 32 * 40)
        self.assertEqual(band_report.scheduled_tiles(c12, 4096, 4100, 2, "blockwise"), 32 * 36)
        self.assertEqual(band_report.fewest_waves(sq, 2074, 8192, 132, (4, 2, 1), "blockwise"), 2)
        # The library's rule: bands of 2 for at least 5 % fewer waves (10 -> 9), not for 28 -> 27.
        self.assertEqual(band_report.library_band(sq, 2074, 8192, 132, "blockwise"), 2)
        self.assertEqual(band_report.library_band(sq, 6771, 8192, 132, "blockwise"), 4)

    def test_rules(self):
        def rows(m, n, name, us):
            return [{"family": "sparse24", "M": m, "N": n, "K": 8192, "config": name + ("_sw%d" % b if b else ""),
                     "us": u} for b, u in us.items()]
        # 4445: band 2 fastest and fitted; 2048 on the 128x192 tile: band 1 fitted but slowest.
        blockwise = [dict(r, family="blockwise") for r in rows(2074, 8192, "128x128x128_c1x1_coop",
                                                                {4: 100.0, 2: 90.0, 1: 95.0})]
        path = self.write(blockwise + rows(4445, 10240, FAST_C2, {0: 330.0, 4: 330.0, 2: 300.0, 1: 320.0}) +
                          rows(2048, 10240, WIDE, {4: 200.0, 2: 190.0, 1: 220.0}) +
                          rows(5000, 8192, WIDE, {4: 100.0}) +  # not timed in bands of 2: left out
                          rows(6000, 8192, WIDE, {4: 100.0, 2: 99.0}))  # no band 1: the rules that take it skip it
        rc, out, err = self.run_main(path)
        self.assertEqual(rc, 0, err)
        self.assertIn("4 points", out)
        self.assertIn("band1   -  ", lines_of(out)["6000"])
        lines = {l.split()[0]: l for l in out.splitlines() if l.split()[0].isdigit()}
        self.assertIn("waves  10/  9/  9  band2 0.900  band1 0.950  fastest 2  library 2", lines["2074"])
        self.assertIn("fastest 2  library 2", lines["4445"])  # 13 waves against 11
        self.assertIn("fastest 2  library 4", lines["2048"])  # 8 against 8
        summary = {l.split()[0]: l for l in out.splitlines() if l.startswith("  ")}
        # fewest-waves: 0.9, 300/330 and 220/200 (and 6000's band, if 1, not timed); fewest-waves-2:
        # 0.9, 300/330 and 200/200; oracle 0.9, 300/330, 190/200 and 99/100.
        self.assertIn("0 more than 2 % slower (4 points)", summary["library"])
        self.assertIn("0.900-1.100, 1 more than 2 % slower", summary["fewest-waves"])
        self.assertIn("0.900-1.000, 0 more", summary["fewest-waves-2"])
        self.assertIn("0.900-0.990, 0 more", summary["oracle"])

    def test_bad_usage(self):
        self.assertEqual(self.run_main()[0], 2)
        self.assertEqual(self.run_main("/nonexistent.jsonl")[0], 2)
        self.assertEqual(self.run_main(self.write([]), "--sms")[0], 2)
        rc, out, err = self.run_main(self.write([{"family": "sparse24", "M": 1, "N": 1, "K": 1, "config": WIDE,
                                                  "us": 1.0}]))
        self.assertEqual(rc, 2)
        self.assertIn("no point", err)


def lines_of(out):
    return {l.split()[0]: l for l in out.splitlines() if l.split() and l.split()[0].isdigit()}


if __name__ == "__main__":
    unittest.main()
