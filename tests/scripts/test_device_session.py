#!/usr/bin/env python3
"""CPU test of scripts/device_session.sh with stand-ins for `nvidia-smi` and `qsgemm`: the bench call
on a card other than an H200 (the narrow-tile check and both blockwise sweeps, one tarball, the
gzipped library unpacked), grid2 refused off an H200, heldout under a short CAP, an unknown call,
and a folder with neither a library nor the staged headers to build one.

    python3 -m unittest discover -s tests/scripts -v      (or: ctest -L cpu -R check_cliffs_script)
"""
import gzip
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "device_session.sh")

SMI = "#!/bin/sh\necho '%s'\n"
# `qsgemm`: logs its arguments, writes a JSON line for --json and a sweep file for --out.
QSGEMM = r'''#!/bin/sh
echo "qsgemm $*" >> "$(dirname "$0")/calls.txt"
prev=
for a in "$@"; do
  case "$prev" in
    --json) echo '{"family":"blockwise","M":1,"N":1,"K":1,"config":"x","us":1.0}' >> "$a" ;;
    --out) echo '{"device":"stand-in","git_commit":"abc","rows":[]}' > "$a/blockwise_sweep.json" ;;
  esac
  prev=$a
done
exit 0
'''


def write_exe(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class DeviceSessionTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.bin = os.path.join(self.tmp, "bin")
        self.carry = os.path.join(self.tmp, "carry")
        self.out = os.path.join(self.tmp, "out")
        for d in (self.bin, self.carry, self.out):
            os.makedirs(d)
        write_exe(os.path.join(self.carry, "qsgemm"), QSGEMM)
        with gzip.open(os.path.join(self.carry, "libqsgemm.so.0.gz"), "wb") as f:
            f.write(b"stand-in library")
        with open(os.path.join(self.carry, "COMMIT"), "w") as f:
            f.write("abc1234\n")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_call(self, call, card="NVIDIA H100 80GB HBM3", cap=None):
        write_exe(os.path.join(self.bin, "nvidia-smi"), SMI % card)
        env = dict(os.environ, PATH=self.bin + os.pathsep + os.environ["PATH"], OUT=self.out)
        if cap is not None:
            env["CAP"] = str(cap)
        return subprocess.run(["bash", SCRIPT, call, self.carry], env=env, capture_output=True, text=True,
                              timeout=120)

    def calls(self):
        path = os.path.join(self.carry, "calls.txt")
        if not os.path.exists(path):
            return ""
        with open(path) as f:
            return f.read()

    def test_bench_off_h200_runs_the_narrow_check_and_both_sweeps(self):
        r = self.run_call("bench")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("build abc1234", r.stdout)
        with open(os.path.join(self.carry, "libqsgemm.so.0"), "rb") as f:
            self.assertEqual(f.read(), b"stand-in library")
        calls = self.calls()
        self.assertIn("tune blockwise", calls)
        self.assertIn("verify", calls)
        self.assertEqual(calls.count("bench blockwise --sweep"), 2)
        self.assertIn("--sweep-layers partialk.4096x14352", calls)
        self.assertEqual(sorted(os.listdir(self.out)), ["bench.tgz", "summary.txt"])
        with tarfile.open(os.path.join(self.out, "bench.tgz")) as t:
            names = set(t.getnames())
        for name in ("bench/blockwise_sweep.json", "bench/blockwise_sweep_partialk.json",
                     "bench/tune_blockwise_narrow_large_m_heldout.jsonl", "bench/summary.txt"):
            self.assertIn(name, names)
        with open(os.path.join(self.out, "summary.txt")) as f:
            self.assertIn("check_cliffs", f.read())

    def test_grid2_refuses_another_card(self):
        r = self.run_call("grid2")
        self.assertEqual(r.returncode, 3)
        self.assertIn("not an H200", r.stdout)
        self.assertNotIn("bench", self.calls())

    def test_heldout_under_a_short_cap_skips_the_probes(self):
        r = self.run_call("heldout", cap=10)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        calls = self.calls()
        self.assertIn("--interleave --configs 64x128x128_c1x1_pingpong,128x128x128_c1x1_coop", calls)
        self.assertNotIn("--swizzles 0,4,2,1", calls)  # pending 12's probe needs 30 s
        self.assertNotIn("--split-k", calls)           # pending 11's needs 20 s
        self.assertNotIn("tune sparse24", calls)       # the sk32 held-out check needs 40 s
        with tarfile.open(os.path.join(self.out, "heldout.tgz")) as t:
            self.assertIn("heldout/narrow/verify.txt", t.getnames())

    def test_heldout_runs_the_sk32_check_in_both_modes(self):
        r = self.run_call("heldout", cap=575)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        calls = self.calls()
        with open(os.path.join(ROOT, "bench/results/h100/tuning/tune_sparse24_sk32_12cols_heldout_points.txt")) as f:
            points = [line.split() for line in f if line.strip()]
        sk32 = [c for c in calls.splitlines() if "128x32x256_c1x1_coop_streamk,64x128x256_c1x1_pingpong" in c]
        self.assertEqual(len(sk32), len(points) + (len(points) + 1) // 2)  # every point, every other in fast mode too
        self.assertIn("--m %s --n %s --k %s --fast-accum" % tuple(points[0]), calls)
        self.assertIn("--split-k 1,2,4", calls)
        self.assertIn("--swizzles 0,4,2,1", calls)

    def test_unknown_call(self):
        r = self.run_call("sweep")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown call 'sweep'", r.stderr)
        self.assertEqual(os.listdir(self.out), [])

    def test_no_library_and_nothing_staged_to_build_one(self):
        os.remove(os.path.join(self.carry, "libqsgemm.so.0.gz"))
        r = self.run_call("bench")
        self.assertEqual(r.returncode, 2)
        self.assertIn("cutlass_include.tgz missing", r.stdout)
        self.assertEqual(self.calls(), "")


if __name__ == "__main__":
    unittest.main()
