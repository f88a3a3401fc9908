"""scripts/tune_ab.py: pairs each configuration with its _wholelast twin per point."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import tune_ab  # noqa: E402


def line(config, us, m=16, **extra):
    return dict(family="blockwise", scales="group_1x128_x_block_128x128", M=m, N=4096, K=4096, config=config, us=us,
                **extra)


class TuneAbTest(unittest.TestCase):
    def test_pairs_twins_per_point_and_skips_failed_and_unpaired(self):
        lines = [line("a", 10.0), line("a_wholelast", 12.0), line("b", 8.0), line("b_wholelast", -1.0),
                 line("c", 9.0), line("a", 20.0, m=32), line("a_wholelast", 19.0, m=32)]
        p = tune_ab.pairs(lines)
        self.assertEqual(list(p.values()), [[("a", 10.0, 12.0)], [("a", 20.0, 19.0)]])

    def test_main_prints_ratios_and_geomean(self):
        lines = [line("a", 10.0), line("a_wholelast", 12.5), line("a", 20.0, m=32), line("a_wholelast", 20.0, m=32)]
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write("\n".join(json.dumps(r) for r in lines) + "\n")
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(tune_ab.main([f.name]), 0)
        os.unlink(f.name)
        text = out.getvalue()
        self.assertIn("1.250x", text)
        self.assertIn("geomean 1.118 over 2, lowest 1.000, highest 1.250", text)

    def test_usage(self):
        with redirect_stdout(io.StringIO()):
            self.assertEqual(tune_ab.main([]), 2)


if __name__ == "__main__":
    unittest.main()
