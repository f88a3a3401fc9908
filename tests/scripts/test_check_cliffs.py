#!/usr/bin/env python3
"""CPU test of scripts/check_cliffs.py (issue #24): a synthetic sweep JSON passes; each planted cliff
fails with exit status 1 and is named in the report. Also the readme_table.py column choice.

    python3 -m unittest discover -s tests/scripts -v      (or: ctest -L cpu -R check_cliffs)
Standard library only (no pytest needed).
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

import check_cliffs  # noqa: E402
import readme_table  # noqa: E402

MS = [1, 2, 3, 5, 8, 16, 24, 32, 48, 64, 96, 128, 256, 288, 384, 512, 1024, 4096]


def sparse_rows(layer="l3-70b.gate_up", n=57344, k=8192):
    """A healthy sparse sweep: qsgemm time grows with M; faster than both baselines everywhere."""
    rows = []
    for m in MS:
        t = 20.0 + 0.05 * m  # monotone in M
        for family in ("sparse24", "sparse24_fastaccum"):
            rows.append({"family": family, "layer": layer, "M": m, "N": n, "K": k, "out_dtype": "bf16",
                         "config": "c", "qsgemm_us": t, "bytes_moved": 1,
                         "baselines_us": {"cublaslt_fp8_rowwise": t * 1.5, "cusparselt_fp8": t * 1.05}})
    return rows


def blockwise_rows():
    rows = []
    for m in MS:
        for layer, k in (("l3-8b.o", 4096), ("partialk.4096x4112", 4112)):
            t = (10.0 + 0.02 * m) * k / 4096
            rows.append({"family": "blockwise_1d2d", "layer": layer, "M": m, "N": 4096, "K": k, "qsgemm_us": t,
                         "bytes_moved": 1, "baselines_us": {"cublaslt_fp8_block128": t * 1.1}})
            rows.append({"family": "rowwise", "layer": layer, "M": m, "N": 4096, "K": k, "qsgemm_us": t,
                         "bytes_moved": 1, "baselines_us": {"cublaslt_fp8_rowwise": t * 1.02}})
    # Rows the checker must ignore: a quantizer row (N = 0) and a point where qsgemm did not run.
    rows.append({"family": "quant_fp8_group", "layer": "4096x4096", "M": 4096, "N": 0, "K": 4096, "qsgemm_us": 9.0})
    rows.append({"family": "blockwise_1d2d", "layer": "l3-8b.o", "M": 7, "N": 4096, "K": 4096, "qsgemm_us": None,
                 "baselines_us": {"cublaslt_fp8_block128": 1.0}, "notes": "qsgemm: failed"})
    return rows


def report(rows):
    return {"device": "synthetic", "sms": 132, "git_commit": "test", "rows": rows}


class CheckCliffsTest(unittest.TestCase):
    def run_check(self, rows, *extra):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "sweep.json")
            with open(path, "w") as f:
                json.dump(report(rows), f)
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                code = check_cliffs.main([path, *extra])
            return code, out.getvalue()

    def find(self, rows, family, m, layer=None):
        return next(r for r in rows if r["family"] == family and r["M"] == m and (layer is None or r["layer"] == layer))

    def test_healthy_sweep_passes(self):
        code, out = self.run_check(sparse_rows() + blockwise_rows())
        self.assertEqual(code, 0, out)
        self.assertIn("PASS", out)
        self.assertIn("monotone", out.lower())

    def test_m288_cliff_fails_monotone_and_rowwise(self):
        rows = sparse_rows()
        cliff = self.find(rows, "sparse24", 288)
        cliff["qsgemm_us"] = 3.2 * self.find(rows, "sparse24", 256)["qsgemm_us"]  # issue #24's cliff
        code, out = self.run_check(rows)
        self.assertEqual(code, 1, out)
        self.assertIn("[monotone] sparse24 l3-70b.gate_up: M=288", out)
        self.assertIn("[sparse-vs-rowwise] sparse24 l3-70b.gate_up M=288", out)
        self.assertIn("FAIL", out)

    def test_decode_slower_than_larger_m_fails(self):
        rows = sparse_rows()
        self.find(rows, "sparse24", 1)["qsgemm_us"] = 1.2 * self.find(rows, "sparse24", 32)["qsgemm_us"]
        code, out = self.run_check(rows, "--rules", "monotone")
        self.assertEqual(code, 1, out)
        self.assertIn("M=1 takes", out)

    def test_cusparselt_point_floor_and_geomean(self):
        rows = sparse_rows()
        r = self.find(rows, "sparse24_fastaccum", 512)
        r["baselines_us"]["cusparselt_fp8"] = 0.8 * r["qsgemm_us"]  # 0.80x < 0.85x
        code, out = self.run_check(rows, "--rules", "sparse-vs-cusparselt")
        self.assertEqual(code, 1, out)
        self.assertIn("sparse24_fastaccum l3-70b.gate_up M=512", out)
        for r in rows:
            if r["family"] == "sparse24":
                r["baselines_us"]["cusparselt_fp8"] = 0.9 * r["qsgemm_us"]  # geomean 0.90 < 0.95
        code, out = self.run_check(rows, "--rules", "sparse-vs-cusparselt")
        self.assertEqual(code, 1, out)
        self.assertIn("sparse24 vs cusparselt_fp8, M >= 1: geomean 0.900x", out)

    def test_partial_k_cliff_fails(self):
        rows = blockwise_rows()
        r = self.find(rows, "blockwise_1d2d", 4096, "partialk.4096x4112")
        r["qsgemm_us"] *= 1.5  # ~0.67x the TFLOP/s of K = 4096
        r["baselines_us"]["cublaslt_fp8_block128"] = r["qsgemm_us"] * 1.1
        code, out = self.run_check(rows, "--rules", "partial-k")
        self.assertEqual(code, 1, out)
        self.assertIn("[partial-k] blockwise_1d2d partialk.4096x4112 M=4096", out)
        self.assertIn("K=4096 (l3-8b.o)", out)

    def test_blockwise_and_rowwise_floors(self):
        rows = blockwise_rows()
        r = self.find(rows, "blockwise_1d2d", 96, "l3-8b.o")
        r["baselines_us"]["cublaslt_fp8_block128"] = 0.9 * r["qsgemm_us"]
        r = self.find(rows, "rowwise", 96, "l3-8b.o")
        r["baselines_us"]["cublaslt_fp8_rowwise"] = 0.97 * r["qsgemm_us"]
        code, out = self.run_check(rows)
        self.assertEqual(code, 1, out)
        self.assertIn("[blockwise-vs-lt] blockwise_1d2d l3-8b.o M=96", out)
        self.assertIn("[rowwise] rowwise l3-8b.o M=96", out)

    def test_monotone_per_rank_and_group(self):
        # W4A4 files time every rank of a layer: a higher rank is slower at every M, which is no cliff.
        rows = []
        for rank in (0, 64, 128):
            for group in (64, 128):
                for m in MS:
                    rows.append({"family": "w4a4_lowrank", "layer": "seed", "M": m, "N": 4096, "K": 4096,
                                 "out_dtype": "bf16", "rank": rank, "group": group,
                                 "qsgemm_us": (10.0 + 0.01 * m) * (1 + rank / 64) * (1 + group / 256)})
        code, out = self.run_check(rows, "--rules", "monotone")
        self.assertEqual(code, 0, out)
        self.find(rows, "w4a4_lowrank", 96)["qsgemm_us"] *= 1.5  # rank 0, group 64: slower than 128
        code, out = self.run_check(rows, "--rules", "monotone")
        self.assertEqual(code, 1, out)
        self.assertIn("[monotone] w4a4_lowrank seed rank=0 group=64: M=96", out)

    def test_rules_without_points_are_not_failures(self):
        code, out = self.run_check(blockwise_rows(), "--rules", "sparse-vs-rowwise,sparse-vs-cusparselt")
        self.assertEqual(code, 0, out)
        self.assertIn("n/a", out)

    def test_bad_input(self):
        code, _ = self.run_check(sparse_rows(), "--rules", "no-such-rule")
        self.assertEqual(code, 2)


class ReadmeTableColumnsTest(unittest.TestCase):
    def test_every_m_or_chosen_columns(self):
        reports = {"sparse": report(sparse_rows()), "blockwise": report(blockwise_rows())}
        sources = {"sparse": "s.json", "blockwise": "b.json"}
        head = readme_table.build_table(reports, sources)[0]
        for m in MS:
            self.assertIn(f"M={m} ", head + " ")
        head = readme_table.build_table(reports, sources, ms_columns=[1, 288, 4096])[0]
        self.assertEqual(head.count("M="), 3)
        self.assertIn("M=288", head)
        with self.assertRaises(SystemExit):
            readme_table.build_table(reports, sources, ms_columns=[77777])


if __name__ == "__main__":
    unittest.main()
