#!/usr/bin/env python3
"""CPU test of scripts/perf_results_table.py: the geometric means per M on hand-made bench files
(a refused baseline as `–`, the partial-K layers apart, the other scale pairs' line), the doc's
block replaced in place and nothing else, and a doc without the markers refused.

    python3 -m unittest discover -s tests/scripts -v      (or: ctest -L cpu -R check_cliffs_script)
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import perf_results_table  # noqa: E402


def row(family, layer, m, k, us, **baselines):
    return {"family": family, "layer": layer, "M": m, "N": 4096, "K": k, "qsgemm_us": us, "baselines_us": baselines}


SPARSE = {"rows": [
    row("sparse24", "a", 1, 4096, 10.0, cublaslt_fp8_rowwise=20.0, cublaslt_fp8_tensor=10.0, cusparselt_fp8=10.0),
    row("sparse24", "b", 1, 4096, 10.0, cublaslt_fp8_rowwise=80.0, cublaslt_fp8_tensor=40.0, cusparselt_fp8=5.0),
    row("sparse24_fastaccum", "a", 1, 4096, 5.0, cusparselt_fp8=10.0),
    row("sparse24_fastaccum", "b", 1, 4096, 5.0, cusparselt_fp8=5.0),
    row("sparse24", "a", 8, 4096, 10.0, cublaslt_fp8_rowwise=30.0, cublaslt_fp8_tensor=10.0, cusparselt_fp8=10.0),
    row("sparse24_fastaccum", "a", 8, 4096, 10.0, cusparselt_fp8=10.0),
    {"family": "compress_sparse24", "layer": "x", "M": 0, "qsgemm_us": 1.0, "baselines_us": {}},
]}
BLOCKWISE = {"rows": [
    row("blockwise_1d2d", "w1", 1, 4096, 10.0, cublaslt_fp8_tensor=9.0),
    row("blockwise_1d2d", "w2", 1, 8192, 10.0, cublaslt_fp8_tensor=9.0),
    row("blockwise_1d2d", "p", 1, 4112, 10.0, cublaslt_fp8_tensor=9.0),
    row("blockwise_1d2d", "w1", 8, 4096, 10.0, cublaslt_fp8_block128=12.0, cublaslt_fp8_tensor=9.0),
    row("blockwise_1d2d", "w2", 8, 8192, 10.0, cublaslt_fp8_block128=12.0, cublaslt_fp8_tensor=9.0),
    row("blockwise_1d2d", "p", 8, 4112, 10.0, cublaslt_fp8_block128=15.0, cublaslt_fp8_tensor=9.0),
    row("rowwise", "w1", 1, 4096, 10.0, cublaslt_fp8_rowwise=16.0),
    row("rowwise", "w2", 1, 8192, 10.0, cublaslt_fp8_rowwise=16.0),
    row("rowwise", "p", 1, 4112, 10.0, cublaslt_fp8_rowwise=99.0),  # partial K: not in the per-row column
    row("rowwise", "w1", 8, 4096, 10.0, cublaslt_fp8_rowwise=10.0),
    row("rowwise", "w2", 8, 8192, 10.0, cublaslt_fp8_rowwise=10.0),
    row("blockwise_1d1d", "w1", 1, 4096, 20.0),
    row("blockwise_1d1d", "w1", 8, 4096, 20.0),
]}


class PerfResultsTableTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.sparse = os.path.join(self.tmp, "sparse24.json")
        self.blockwise = os.path.join(self.tmp, "blockwise.json")
        for path, doc in ((self.sparse, SPARSE), (self.blockwise, BLOCKWISE)):
            with open(path, "w") as f:
                json.dump(doc, f)
        self.doc = os.path.join(self.tmp, "performance.md")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write_doc(self, text):
        with open(self.doc, "w") as f:
            f.write(text)

    def run_script(self, *extra):
        return perf_results_table.main(["--sparse", self.sparse, "--blockwise", self.blockwise, "--doc", self.doc,
                                        "--ms", "1,8"] + list(extra))

    def test_table_values(self):
        text = perf_results_table.table(SPARSE, BLOCKWISE, [1, 8])
        lines = text.split("\n")
        self.assertIn("`sparse24.json`: 2; `blockwise.json`: the 2 whose K", lines[0])
        self.assertIn("the one partial-K ones apart", lines[1])
        # M = 1: row-wise geomean(2, 8) = 4; per-tensor geomean(1, 4) = 2; cuSPARSELt geomean(1, 0.5);
        # fast geomean(2, 1); block-scaled refused at M = 1 on every layer; per-tensor 0.9; per-row 1.6
        # (the partial-K layer's 9.9 left out).
        self.assertIn("| 1 | 4.00× | 2.00× | 0.71× | 1.41× | – | – | 0.90× | 1.60× |", lines)
        self.assertIn("| 8 | 3.00× | 1.00× | 1.00× | 1.00× | 1.20× | 1.50× | 0.90× | 1.00× |", lines)
        self.assertEqual(lines[-1], "Other pairs (no cuBLASLt counterpart), their time against 1×128·128×128's, "
                                    "2 points (the users grid): 1×128·1×128 2.00×.")

    def test_doc_block_replaced_in_place(self):
        self.write_doc("before\n<!-- results:begin (note) -->\nold table\n<!-- results:end -->\nafter\n")
        self.assertEqual(self.run_script(), 0)
        with open(self.doc) as f:
            doc = f.read()
        self.assertTrue(doc.startswith("before\n<!-- results:begin (note) -->\nGeometric mean per M"))
        self.assertTrue(doc.endswith("2.00×.\n<!-- results:end -->\nafter\n"))
        self.assertNotIn("old table", doc)
        self.assertEqual(self.run_script(), 0)  # a second run changes nothing
        with open(self.doc) as f:
            self.assertEqual(f.read(), doc)

    def test_doc_without_markers_is_refused(self):
        self.write_doc("no markers here\n")
        self.assertEqual(self.run_script(), 2)
        with open(self.doc) as f:
            self.assertEqual(f.read(), "no markers here\n")

    def test_bad_ms(self):
        self.write_doc("<!-- results:begin -->\n<!-- results:end -->\n")
        self.assertEqual(perf_results_table.main(["--doc", self.doc, "--ms", "1,x"]), 2)


if __name__ == "__main__":
    unittest.main()
