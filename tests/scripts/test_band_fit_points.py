#!/usr/bin/env python3
"""CPU test of scripts/band_fit_points.py with a stand-in for `qsgemm plan`: only shapes whose two
bands differ and whose plan has no tail, both modes alternating, the cluster twin named where the
table has one, a fixed seed giving the same points, bad usage and a failing `qsgemm` exit 2.

    python3 -m unittest discover -s tests/scripts -v      (or: ctest -L cpu -R check_cliffs_script)
"""
import contextlib
import io
import os
import stat
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import band_fit_points  # noqa: E402

# A stand-in for `qsgemm plan sparse24` and `plan blockwise --order` (the 1x2 cluster from 8192 rows,
# fitted band 1 where M % 5 == 0). sparse24: --models lists the table (T_c1x1_coop has a twin T_c2x1_coop,
# F_c2x1_fast none); --stdin --order plans T_c1x1_coop (F_c2x1_fast with --fast-accum), runs bands of 4,
# fits 2 where M % 3 == 0, and has a tail launch where M % 7 == 0. EXIT: exit with that status.
FAKE = r'''#!/usr/bin/env python3
import sys
EXIT = %d
if EXIT:
    print("broken", file=sys.stderr)
    sys.exit(EXIT)
args = sys.argv[1:]
if args[:2] not in (["plan", "sparse24"], ["plan", "blockwise"]):
    sys.exit(9)
if "--models" in args:
    print("4096 8192 8192 T_c1x1_coop 1 - 0 1.00")
    for name in ("T_c1x1_coop", "T_c2x1_coop", "F_c2x1_fast"):
        print("  %%s 1.00" %% name)
    sys.exit(0)
if args[:2] == ["plan", "blockwise"]:
    if "--order" not in args:
        sys.exit(9)
    m, n, k = (int(args[args.index(f) + 1]) for f in ("--m", "--n", "--k"))
    cfg = "128x128x128_c1x2_coop" if n >= 8192 else "128x128x128_c1x1_coop"
    print(m, n, k, cfg, 1, "-", 0, "-", 4, 1 if m %% 5 == 0 else 4)
    sys.exit(0)
if "--stdin" not in args or "--order" not in args or "--card" not in args:
    sys.exit(9)
cfg = "F_c2x1_fast" if "--fast-accum" in args else "T_c1x1_coop"
for line in sys.stdin:
    m, n, k = (int(v) for v in line.split())
    tail, rows = ("U", 4) if m %% 7 == 0 else ("-", 0)
    print(m, n, k, cfg, 1, tail, rows, "1.00", 4, 2 if m %% 3 == 0 else 4)
'''


class BandFitPointsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def fake(self, exit_code=0):
        path = os.path.join(self.dir.name, "qsgemm%d" % exit_code)
        with open(path, "w") as f:
            f.write(FAKE % exit_code)
        os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
        return path

    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = band_fit_points.main(["band_fit_points.py"] + list(args))
        return rc, out.getvalue(), err.getvalue()

    def common(self, *extra):
        return ("--qsgemm", self.fake(), "--m", "2048-4095", "--n", "4096,8192", "--k", "2048", "--draw", "300",
                "--count", "12") + extra

    def test_points(self):
        rc, out, err = self.run_main(*self.common())
        self.assertEqual(rc, 0, err)
        lines = [line.split() for line in out.splitlines()]
        self.assertEqual(len(lines), 24)
        self.assertEqual([f[0] for f in lines], ["default", "fast"] * 12)
        for mode, m, n, k, configs in lines:
            m = int(m)
            self.assertTrue(2048 <= m <= 4095 and m % 3 == 0 and m % 7 != 0, m)
            self.assertIn(int(n), (4096, 8192))
            self.assertEqual(k, "2048")
            self.assertEqual(configs, "T_c1x1_coop,T_c2x1_coop" if mode == "default" else "F_c2x1_fast")
        self.assertIn("default:", err)
        self.assertIn("fast:", err)

    def test_blockwise(self):
        rc, out, err = self.run_main(*self.common("--family", "blockwise", "--draw", "60", "--count", "5"))
        self.assertEqual(rc, 0, err)
        lines = [line.split() for line in out.splitlines()]
        self.assertEqual(len(lines), 5)
        for mode, m, n, k, configs in lines:
            self.assertEqual(mode, "blockwise")
            self.assertEqual(int(m) % 5, 0)
            self.assertEqual(configs, "128x128x128_c1x2_coop,128x128x128_c1x1_coop" if int(n) >= 8192
                             else "128x128x128_c1x1_coop,128x128x128_c1x2_coop")
        self.assertEqual(self.run_main(*self.common("--family", "dense"))[0], 2)

    def test_seed(self):
        out = self.run_main(*self.common())[1]
        self.assertEqual(self.run_main(*self.common())[1], out)
        self.assertNotEqual(self.run_main(*self.common("--seed", "2"))[1], out)

    def test_bad_usage_and_failing_qsgemm(self):
        self.assertEqual(self.run_main("--m", "1-2")[0], 2)  # no --qsgemm
        self.assertEqual(self.run_main(*self.common("--bogus", "1"))[0], 2)
        self.assertEqual(self.run_main(*self.common("--m", "a-b"))[0], 2)
        rc, out, err = self.run_main("--qsgemm", self.fake(exit_code=3))
        self.assertEqual(rc, 2)
        self.assertIn("exit 3", err)


if __name__ == "__main__":
    unittest.main()
