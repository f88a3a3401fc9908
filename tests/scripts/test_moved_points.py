#!/usr/bin/env python3
"""CPU test of scripts/moved_points.py with stand-ins for `qsgemm plan`: the shapes whose plan differs
between two builds (and only those), --no-tail, --whole, a library folder as the old build, a fixed
seed giving the same points, bad usage and a failing `qsgemm` exit 2.

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

import moved_points  # noqa: E402

# A stand-in for `qsgemm plan sparse24 --stdin`. The "new" heuristic takes tile B from 600 tokens
# (tile A below), with a tail launch at odd M from 900; the "old" one (OLD = 1, or a folder holding
# a file OLD_LIB first on LD_LIBRARY_PATH) takes A everywhere. --fast-accum renames the tiles.
# EXIT: exit with that status.
FAKE = r'''#!/usr/bin/env python3
import os, sys
OLD = %d
EXIT = %d
if EXIT:
    print("broken", file=sys.stderr)
    sys.exit(EXIT)
args = sys.argv[1:]
if args[:3] != ["plan", "sparse24", "--stdin"] or "--card" not in args:
    sys.exit(9)
lib = os.environ.get("LD_LIBRARY_PATH", "").split(":")[0]
old = OLD or (lib and os.path.exists(os.path.join(lib, "OLD_LIB")))
suffix = "_fast" if "--fast-accum" in args else ""
for line in sys.stdin:
    m, n, k = (int(v) for v in line.split())
    cfg = "A" if old or m < 600 else "B"
    tail, rows = ("T", 4) if not old and m >= 900 and m %% 2 else ("-", 0)
    print(m, n, k, cfg + suffix, 1, tail, rows, "1.00")
'''


class MovedPointsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def fake(self, name, old=0, exit_code=0):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(FAKE % (old, exit_code))
        os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
        return path

    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = moved_points.main(["moved_points.py"] + list(args))
        return rc, out.getvalue(), err.getvalue()

    def points(self, text):
        return [tuple(int(v) for v in line.split()) for line in text.splitlines()]

    def common(self, old, new, *extra):
        return ("--old", old, "--new", new, "--m", "400-999", "--n", "4096,8192", "--k", "2048",
                "--draw", "400", "--count", "1000", "--card", "h100") + extra

    def test_only_the_moved_shapes(self):
        rc, out, err = self.run_main(*self.common(self.fake("old", old=1), self.fake("new")))
        self.assertEqual(rc, 0, err)
        pts = self.points(out)
        self.assertGreater(len(pts), 50)
        self.assertEqual(pts, sorted(pts))
        self.assertEqual(len(set(pts)), len(pts))
        for m, n, k in pts:
            self.assertGreaterEqual(m, 600)  # below, both take A
            self.assertLessEqual(m, 999)
            self.assertIn(n, (4096, 8192))
            self.assertEqual(k, 2048)
        self.assertIn("%d of" % len(pts), err)
        self.assertIn("A -> B", err)
        self.assertIn("A -> B+T@4", err)

    def test_no_tail_and_count(self):
        rc, out, err = self.run_main(*self.common(self.fake("old", old=1), self.fake("new"), "--no-tail"))
        self.assertEqual(rc, 0, err)
        pts = self.points(out)
        self.assertTrue(pts)
        self.assertFalse([p for p in pts if p[0] >= 900 and p[0] % 2], "a shape whose new plan has a tail")
        rc, out, err = self.run_main(*self.common(self.fake("old", old=1), self.fake("new"), "--count", "7"))
        self.assertEqual(len(self.points(out)), 7)

    def test_whole_columns_and_seed(self):
        args = self.common(self.fake("old", old=1), self.fake("new"), "--whole", "128", "--fast-accum")
        rc, out, err = self.run_main(*args)
        self.assertEqual(rc, 0, err)
        pts = self.points(out)
        self.assertTrue(pts)
        self.assertTrue(all(m % 128 == 0 and m >= 400 for m, _, _ in pts), pts)
        self.assertIn("A_fast -> B_fast", err)
        self.assertEqual(self.run_main(*args)[1], out)  # the same seed, the same points
        self.assertNotEqual(self.run_main(*(args + ("--seed", "2", "--count", "3")))[1], out)

    def test_old_build_as_a_library_folder(self):
        lib = os.path.join(self.dir.name, "oldlib")
        os.mkdir(lib)
        open(os.path.join(lib, "OLD_LIB"), "w").close()
        before = os.environ.get("LD_LIBRARY_PATH")
        rc, out, err = self.run_main(*self.common(lib, self.fake("new")))
        self.assertEqual(rc, 0, err)
        self.assertTrue(self.points(out))
        self.assertTrue(all(m >= 600 for m, _, _ in self.points(out)))
        self.assertEqual(os.environ.get("LD_LIBRARY_PATH"), before)  # restored
        # The same folder without the marker: the same heuristic, nothing moves.
        os.remove(os.path.join(lib, "OLD_LIB"))
        rc, out, err = self.run_main(*self.common(lib, self.fake("new")))
        self.assertEqual((rc, out), (0, ""))
        self.assertIn("0 of", err)

    def test_bad_usage_and_failing_qsgemm(self):
        new = self.fake("new")
        self.assertEqual(self.run_main("--old", new, "--new", new)[0], 2)  # no --m/--n/--k
        self.assertEqual(self.run_main(*self.common(new, new, "--card", "a100"))[0], 2)
        self.assertEqual(self.run_main("--old", new, "--new", new, "--m", "900-100", "--n", "1", "--k", "1")[0], 2)
        self.assertEqual(self.run_main(*self.common(new, new, "--bogus"))[0], 2)
        rc, out, err = self.run_main(*self.common(self.fake("broken", exit_code=3), new))
        self.assertEqual(rc, 2)
        self.assertIn("exit 3", err)


if __name__ == "__main__":
    unittest.main()
