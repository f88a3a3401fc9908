// bench/bench_main.cpp — the command line of `qsgemm bench`.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench.h"

namespace qsgemm::bench {
namespace {

const char kUsage[] =
    "usage: qsgemm bench <sparse24|blockwise|w4a4|all> [options]\n"
    "\n"
    "Times qsgemm's kernels and the vendor baselines on the same shapes in the same run, by the same\n"
    "method (L2 flushed before every timed run, median, two interleaved rounds; with --graph every\n"
    "candidate of a short point as CUDA-graph replays), cuBLASLt at the best of its heuristic's top\n"
    "algorithms; prints a table with speedups, TFLOP/s and GB/s, and writes <out>/<benchmark>.json in\n"
    "the shape of shared/BENCH_RESULTS.md after every layer.\n"
    "\n"
    "  sparse24    2:4 sparse FP8 (sparse24_linear) vs cuBLASLt FP8 row-wise and per-tensor, cuSPARSELt\n"
    "              FP8 2:4, cuBLAS bf16; plus sparse24_compress and quantize_fp8_per_token rows\n"
    "  blockwise   FP8 1x128 x 128x128 (blockwise_linear) vs cuBLASLt FP8 block-scaled and per-tensor,\n"
    "              row-wise vs cuBLASLt FP8 row-wise; plus quantize_fp8_per_token_group rows\n"
    "  w4a4        W4A4 + low-rank (w4a4_linear, ranks 0-128) vs cuBLASLt FP8 row-wise, cuBLAS bf16 +\n"
    "              unfused low-rank, its own r = 0 kernel; quantizer and whole-layer rows (default layer\n"
    "              'seed' 4096x4096; --layers adds l3-8b.* / l3-70b.*; --quick: M 16, 2048, r 0, 64)\n"
    "  all         sparse24 and blockwise, one after the other\n"
    "\n"
    "options:\n"
    "  --out DIR          folder of the JSON files (default bench/results/h200, created if missing)\n"
    "  --json FILE        write the JSON to FILE instead (one benchmark only)\n"
    "  --layers a,b       only these layers, e.g. l3-8b.o,l3-70b.down (one benchmark only)\n"
    "  --ms 1,16,4096     only these token counts M (default: the --grid list)\n"
    "  --ranks 0,64       w4a4: only these ranks (multiples of 16 up to 128; default 0,16,32,64,128)\n"
    "  --grid users|powers  the default M list. users (default): the powers of two plus in-between values\n"
    "                     that continuous batching produces: 1,2,3,5,8,12,16,24,32,48,64,96,128,160,192,\n"
    "                     256,288,384,512,640,768,1024,1280,1536,2048,2560,3072,4096,6144,8192,12288,16384\n"
    "                     (32 values); powers: 1,8,16,32,64,...,16384 (13 values, the committed results' grid)\n"
    "  --quick            a smoke test: 2 layers x M in {16, 256, 4096}\n"
    "  --all-combos       blockwise: also the 1d1d, 2d1d and 2d2d families (no baseline for those)\n"
    "  --packed-rows      blockwise: X and W rows of K % 128 != 0 packed (ld = K), not padded to\n"
    "                     fp8_row_ld(K) as the library's quantizers write them (both for every candidate)\n"
    "\n"
    "dense M sweep (issue #24: no performance cliffs between grid points; scripts/check_cliffs.py reads it):\n"
    "  --sweep            time every ~5 % of M from 1 to 16384 (M' = max(M + 1, round(M * 1.05)), 159\n"
    "                     values) on the family's sweep layers, qsgemm against its main baseline(s) only:\n"
    "                     sparse24 (both accumulation modes) vs cuBLASLt FP8 row-wise and cuSPARSELt;\n"
    "                     blockwise 1x128.128x128 vs cuBLASLt block-scaled. Writes\n"
    "                     <out>/<family>_sweep.json (no quantizer rows).\n"
    "                     Sweep layers: sparse24 l3-8b.gate_up,l3-70b.gate_up,l3-70b.qkv,l3-70b-tp8.qkv;\n"
    "                     blockwise l3-8b.o,l3-8b.gate_up,l3-70b.down,ds3.2112x7168,partialk.4096x4112\n"
    "  --sweep-layers a,b the sweep's layers instead (any of the benchmark's layers)\n"
    "  --sweep-max-m M    the sweep's largest M (default 16384; it is always the last point)\n"
    "  --sweep-step F     the sweep's ratio between neighbouring Ms, > 1 (default 1.05)\n"
    "  --sweep-full       the sweep times every candidate of the normal run (per-tensor, bf16, the row-wise\n"
    "                     family, memcpy floors), not only the main baselines\n"
    "  --estimate         print the layers, the M list and the estimated run time; run nothing (no GPU needed)\n"
    "\n"
    "timing:\n"
    "  --graph            points where a candidate runs under 50 us: time every candidate as CUDA-graph\n"
    "                     replays (all or none: when one cannot be captured, all are timed directly)\n"
    "  --dirty-flush      flush L2 with a 512 MiB memset (shared/tools' method; the timed run then also\n"
    "                     writes back the dirty lines) instead of a 512 MiB read (cold, clean L2)\n"
    "  --no-check         skip rel_err (float64 CPU reference on sampled outputs, qsgemm's and baselines')\n"
    "  --reps N           timed runs per measurement at most (default 50)\n"
    "  --budget-ms T      fewer runs when N runs would take more than T ms of GPU time (default 200)\n"
    "  --algo-search N    cuBLASLt: time up to N of its heuristic's algorithms per point and keep the\n"
    "                     fastest (default 8; 1 = the heuristic's top pick, no search)\n"
    "  --search-reps R    timed runs per algorithm in that search at most (default 5; budget T/10)\n"
    "  --help             this text\n"
    "\n"
    "environment:\n"
    "  QSGEMM_GIT_COMMIT       recorded as git_commit in the JSON (default \"unknown\")\n"
    "  QSGEMM_CUSPARSELT_LIB   libcusparseLt.so.0 (or its folder) when the loader cannot find it\n"
    "\n"
    "exit codes: 0 the sweep ran and the JSON was written (failed points carry notes);\n"
    "            1 the JSON could not be written, or the CUDA context was lost (rows so far are written);\n"
    "            2 bad usage, or no usable GPU\n";

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

double parse_double(const std::string& s, const char* option) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno != 0 || !(v > 1.0) || v > 16.0)
    throw std::invalid_argument(std::string(option) + ": '" + s + "' is not a number in (1, 16]");
  return v;
}

int64_t parse_int(const std::string& s, const char* option, int64_t min_value) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || v < min_value)
    throw std::invalid_argument(std::string(option) + ": '" + s + "' is not an integer >= " + std::to_string(min_value));
  return v;
}

}  // namespace

int bench_main(int argc, char** argv) {
  BenchOptions opt;
  std::string which;
  try {
    for (int i = 0; i < argc; ++i) {
      std::string arg = argv[i], value;
      const bool has_eq = arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos;
      if (has_eq) {
        value = arg.substr(arg.find('=') + 1);
        arg = arg.substr(0, arg.find('='));
      }
      auto take = [&]() -> std::string {
        if (has_eq) return value;
        if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
        return argv[++i];
      };
      if (arg == "--help" || arg == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      } else if (arg == "--out") {
        opt.out_dir = take();
      } else if (arg == "--json") {
        opt.json_path = take();
      } else if (arg == "--layers") {
        opt.layers = split_csv(take());
      } else if (arg == "--ms") {
        for (const std::string& m : split_csv(take())) opt.ms.push_back(parse_int(m, "--ms", 1));
        if (opt.ms.empty()) throw std::invalid_argument("--ms needs at least one value");
      } else if (arg == "--ranks") {
        for (const std::string& r : split_csv(take())) {
          const int64_t v = parse_int(r, "--ranks", 0);
          if (v % 16 != 0 || v > 128) throw std::invalid_argument("--ranks: " + r + " is not a multiple of 16 up to 128");
          opt.ranks.push_back(static_cast<int>(v));
        }
        if (opt.ranks.empty()) throw std::invalid_argument("--ranks needs at least one value");
      } else if (arg == "--grid") {
        opt.grid = take();
        if (opt.grid != "users" && opt.grid != "powers")
          throw std::invalid_argument("--grid: '" + opt.grid + "' is not a grid (users or powers)");
      } else if (arg == "--sweep") {
        opt.sweep = true;
      } else if (arg == "--sweep-layers") {
        opt.sweep_layers = split_csv(take());
        opt.sweep = true;
      } else if (arg == "--sweep-max-m") {
        opt.sweep_max_m = parse_int(take(), "--sweep-max-m", 1);
        opt.sweep = true;
      } else if (arg == "--sweep-step") {
        opt.sweep_step = parse_double(take(), "--sweep-step");
        opt.sweep = true;
      } else if (arg == "--sweep-full") {
        opt.sweep_full = true;
        opt.sweep = true;
      } else if (arg == "--estimate") {
        opt.estimate_only = true;
      } else if (arg == "--quick") {
        opt.quick = true;
      } else if (arg == "--all-combos") {
        opt.all_combos = true;
      } else if (arg == "--packed-rows") {
        opt.packed_rows = true;
      } else if (arg == "--graph") {
        opt.graph = true;
      } else if (arg == "--dirty-flush") {
        opt.dirty_flush = true;
      } else if (arg == "--no-check") {
        opt.check = false;
      } else if (arg == "--reps") {
        opt.reps = static_cast<int>(parse_int(take(), "--reps", 1));
      } else if (arg == "--algo-search") {
        opt.algo_search = static_cast<int>(parse_int(take(), "--algo-search", 1));
      } else if (arg == "--search-reps") {
        opt.search_reps = static_cast<int>(parse_int(take(), "--search-reps", 1));
      } else if (arg == "--budget-ms") {
        opt.budget_ms = static_cast<double>(parse_int(take(), "--budget-ms", 1));
      } else if (arg.rfind("-", 0) == 0) {
        throw std::invalid_argument("unknown option " + arg);
      } else if (which.empty()) {
        which = arg;
      } else {
        throw std::invalid_argument("unexpected argument '" + arg + "'");
      }
    }
    if (which.empty()) throw std::invalid_argument("which benchmark? sparse24, blockwise or all");
    if (which != "sparse24" && which != "blockwise" && which != "w4a4" && which != "all")
      throw std::invalid_argument("unknown benchmark '" + which + "' (sparse24, blockwise, w4a4 or all)");
    if (which == "all" && (!opt.layers.empty() || !opt.json_path.empty() || !opt.sweep_layers.empty()))
      throw std::invalid_argument(
          "--layers, --sweep-layers and --json need one benchmark (sparse24 or blockwise), not all");
    if (opt.sweep && opt.quick) throw std::invalid_argument("--sweep and --quick do not go together");
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "qsgemm bench: %s\n\n%s", e.what(), kUsage);
    return 2;
  }

  if (which == "sparse24") return bench_sparse24(opt);
  if (which == "blockwise") return bench_blockwise(opt);
  if (which == "w4a4") return bench_w4a4(opt);
  const int a = bench_sparse24(opt);
  if (a == 2 && !opt.estimate_only) return a;  // no GPU: the second would say the same
  const int b = bench_blockwise(opt);
  return std::max(a, b);
}

}  // namespace qsgemm::bench
