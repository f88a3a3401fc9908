#!/usr/bin/env python3
"""CPU test of scripts/ingest_results.py in a scratch git repository: a new sweep file takes the
committed one's place, the old file and its cliff report move to tuning/ under the old commit, the
cliff check writes the new report; --dry-run changes nothing; a file of another card, of the same
commit, of an unknown name, or whose archive name is taken is refused before any change.

    python3 -m unittest discover -s tests/scripts -v      (or: ctest -L cpu -R check_cliffs_script)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import ingest_results  # noqa: E402


def sweep(commit, device="NVIDIA H200", slow_at=None):
    """A blockwise partial-K sweep of one layer; slow_at: an M whose time breaks the monotone rule."""
    rows = []
    for m in (100, 200, 400):
        us = 10.0 * m / 100
        if m == slow_at:
            us = 100.0
        rows.append({"family": "blockwise_1d2d", "layer": "l3-8b.o", "M": m, "N": 4096, "K": 4096,
                     "out_dtype": "bf16", "config": "x", "qsgemm_us": us, "baselines_us": {}, "timing": "graph"})
    return {"device": device, "git_commit": commit, "rows": rows}


class IngestResultsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.repo = os.path.join(self.tmp, "repo")
        self.tuning = os.path.join(self.repo, "bench/results/h200/tuning")
        os.makedirs(self.tuning)
        os.makedirs(os.path.join(self.repo, "scripts"))
        shutil.copy(os.path.join(ROOT, "scripts/check_cliffs.py"), os.path.join(self.repo, "scripts"))
        self.committed = os.path.join(self.repo, "bench/results/h200/blockwise_sweep_partialk.json")
        self.write(self.committed, sweep("old1234"))
        self.report = os.path.join(self.tuning, "check_cliffs_blockwise_sweep_partialk.txt")
        with open(self.report, "w") as f:
            f.write("check_cliffs: FAIL: 3 violation(s) in 1 file(s)\n")
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run(["git", "init", "-q", self.repo], check=True)
        subprocess.run(git + ["-C", self.repo, "add", "-A"], check=True)
        subprocess.run(git + ["-C", self.repo, "commit", "-qm", "base"], check=True)
        self.new = os.path.join(self.tmp, "blockwise_sweep_partialk.json")
        self.write(self.new, sweep("new5678", slow_at=100))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    @staticmethod
    def write(path, doc):
        with open(path, "w") as f:
            json.dump(doc, f)

    def ingest(self, *args):
        return ingest_results.main(list(args) + ["--root", self.repo, "--no-plots"])

    def test_new_file_replaces_the_committed_one(self):
        self.assertEqual(self.ingest(self.new), 0)
        with open(self.committed) as f:
            self.assertEqual(json.load(f)["git_commit"], "new5678")
        with open(os.path.join(self.tuning, "blockwise_sweep_partialk_old1234.json")) as f:
            self.assertEqual(json.load(f)["git_commit"], "old1234")
        with open(os.path.join(self.tuning, "check_cliffs_blockwise_sweep_partialk_old1234.txt")) as f:
            self.assertIn("3 violation", f.read())
        with open(self.report) as f:
            self.assertIn("FAIL: 1 violation", f.read())  # 100 tokens slower than 200
        status = subprocess.run(["git", "-C", self.repo, "status", "--short"], capture_output=True, text=True).stdout
        self.assertIn("R  bench/results/h200/blockwise_sweep_partialk.json -> "
                      "bench/results/h200/tuning/blockwise_sweep_partialk_old1234.json", status)

    def test_dry_run_changes_nothing(self):
        self.assertEqual(self.ingest(self.new, "--dry-run"), 0)
        with open(self.committed) as f:
            self.assertEqual(json.load(f)["git_commit"], "old1234")
        self.assertEqual(sorted(os.listdir(self.tuning)), ["check_cliffs_blockwise_sweep_partialk.txt"])

    def test_refusals_change_nothing(self):
        other = os.path.join(self.tmp, "other", "blockwise_sweep_partialk.json")
        os.makedirs(os.path.dirname(other))
        self.write(other, sweep("new5678", device="NVIDIA H100 80GB HBM3"))
        self.assertEqual(self.ingest(other), 2)
        self.write(other, sweep("old1234"))
        self.assertEqual(self.ingest(other), 2)
        unknown = os.path.join(self.tmp, "w4a4.json")
        self.write(unknown, sweep("new5678"))
        self.assertEqual(self.ingest(unknown), 2)
        self.write(os.path.join(self.tuning, "blockwise_sweep_partialk_old1234.json"), sweep("x"))
        self.assertEqual(self.ingest(self.new), 2)
        with open(self.committed) as f:
            self.assertEqual(json.load(f)["git_commit"], "old1234")


if __name__ == "__main__":
    unittest.main()
