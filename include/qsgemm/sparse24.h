// qsgemm/sparse24.h — FP8 GEMM with a 2:4-sparse weight on Hopper (sm_90a).
//
//   Y[M,N] = (s_x ⊙ X_fp8) · (s_w ⊙ W)ᵀ + bias          (an nn.Linear with a 2:4-sparse weight)
//
// Hopper's sparse tensor cores take the sparse operand only as A, K-major. qsgemm therefore
// computes Yᵀ = W · Xᵀ internally: W is the sparse A operand, X (row-major [M,K]) is read as a
// column-major B, and Yᵀ is written column-major, which is Y row-major. Per-channel weight scales
// and the bias become per-row broadcasts of the kernel's output, per-token scales per-column ones.
// The caller sees only the nn.Linear convention above.
//
// Memory: the compressed weight lives in caller-allocated device buffers whose sizes come from
// sparse24_weight_bytes(); qsgemm never allocates. Every call is stream-ordered and never syncs.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "qsgemm/linear.h"
#include "qsgemm/quant.h"
#include "qsgemm/tensor.h"

namespace qsgemm {

// Rules on the weight shape (docs/formats.md §4.4): N % 8 == 0 (16-byte rows of the output),
// K % 32 == 0 (16-byte rows of the compressed values and of X). N, K >= 1.
inline constexpr int kSparse24AlignN = 8;
inline constexpr int kSparse24AlignK = 32;

// A compressed 2:4 FP8 weight: non-owning, describes three device buffers.
//   values: e4m3 [N, K/2] dense row-major (ld = K/2), docs/formats.md §4.2
//   meta:   sparse24_meta_bytes(N, K) bytes, docs/formats.md §4.3
//   scales: float32, [N] (per_tensor_scale == false) or [1]; dequantized w = e4m3 × scale
// The format does not depend on the kernel configuration, output dtype or epilogue. It cannot be
// sliced: the metadata interleaves 64 rows × 128 columns per atom (§4.3), so shard the dense
// weight first (compress accepts any leading dimension) and compress each shard.
struct SparseFp8Weight {
  int64_t N = 0;
  int64_t K = 0;
  uint8_t* values = nullptr;
  uint8_t* meta = nullptr;
  float* scales = nullptr;
  bool per_tensor_scale = false;
};

struct Sparse24WeightBytes {
  size_t values;  // N * K / 2
  size_t meta;    // sparse24_meta_bytes(N, K)
  size_t scales;  // 4 * N (or 4 with a per-tensor scale)
};
Sparse24WeightBytes sparse24_weight_bytes(int64_t N, int64_t K, bool per_tensor_scale = false);

enum class Sparse24Prune : uint8_t {
  kMagnitude,  // keep the two largest magnitudes of every group of 4 (ties: lower index)
  kRequire,    // the input must already be 2:4; the first offending row/group is reported
};

enum class Sparse24Scale : uint8_t {
  kPerChannel,  // scale[n] = amax(kept values of row n) / 448
  kPerTensor,   // one scale = amax(kept values) / 448
  kGiven,       // the caller fills out.scales ([N] or [1]) before the call; values are x / scale. Each must be
                // positive, normal and finite (fp8_scale_is_valid), else kInvalidValue naming the first bad channel
};

struct Sparse24CompressOptions {
  Sparse24Prune prune = Sparse24Prune::kMagnitude;
  Sparse24Scale scale = Sparse24Scale::kPerChannel;
};

// Prune (or check), quantize and compress a dense weight on the GPU.
//   w:   bf16, fp16 or fp32 [N, K] row-major, any ld >= K (a sub-view of a larger weight works) whose
//        rows are 16-byte aligned (base and ld * element size). NaN or Inf anywhere is an error
//        (kInvalidValue, naming row and column).
//   out: buffers sized by sparse24_weight_bytes(N, K, per_tensor); out.N/out.K must equal w's shape,
//        out.per_tensor_scale must match options.scale (kPerTensor => true).
//   workspace: sparse24_compress_workspace_bytes(N, K) bytes of device memory, 8-byte aligned (never
//        null); holds the error flags that are checked on return.
// This function synchronizes `stream` once at the end to report data errors (non-2:4 group, NaN)
// with their location; it is a load-time operation, not a hot-path one.
size_t sparse24_compress_workspace_bytes(int64_t N, int64_t K);
void sparse24_compress(const MatrixView& w, const SparseFp8Weight& out, const Sparse24CompressOptions& options,
                       void* workspace, cudaStream_t stream);

// Dequantize back to dense: out[n,k] = e4m3(value) * scale (0 where pruned).
//   out: bf16 or fp32 [N, K] row-major, ld >= K. Stream-ordered, no sync.
void sparse24_decompress(const SparseFp8Weight& w, const MatrixView& out, cudaStream_t stream);

// Epilogue and schedule options. The shared fields (qsgemm/linear.h):
//   config: -1 (the heuristic chooses) or an index of the config table (sparse24_config(i),
//     sparse24_config_index(name)); a forced index overrides fast_accum. The decode kernel
//     ("skinny_m32_splitk") serves M <= 32 only.
//   workspace: for the stream-K configurations (sparse24_config(i).stream_k), which split K over SMs
//     that would otherwise idle in a ragged last wave, and for split-K. 16-byte aligned. A stream-K
//     call zeroes part of it (cudaMemsetAsync on `stream`) before the kernel. Results are
//     deterministic either way (partial tiles are added in K order). The stream-K configurations
//     promote partial sums (as fast_accum = false); with a workspace the heuristic may pick them for
//     fast_accum requests too, where they measured faster.
//   split_k: for the data-parallel configurations (not stream-K, not the decode kernel): K is cut
//     into split_k slices of whole 256-wide K tiles, run as split_k batches of the same kernel into
//     a float32 workspace [split_k][M][N] (scales applied); a second kernel adds the slices in
//     slice order, adds the bias and rounds once. It fills the SMs that a narrow weight leaves idle
//     at small M. Deterministic; not bit-identical to the unsplit kernel.
//       0 (default): the library splits where it measured faster (sparse24_plan), given the
//         workspace the plan needs; 1: never; 2..16: forced: needs K % (256 * split_k) == 0, a
//         data-parallel configuration (forced, or chosen among them) and a workspace of
//         split_k * M * N * 4 bytes; otherwise kInvalidArgument.
struct Sparse24Options : LinearOptions {
  // false (default): partial sums are promoted to float32 every 256 of K, the accuracy the tests
  // hold to. true: FP8 fast accumulation in the tensor core over the whole K — faster from 768
  // tokens, with the larger error measured in docs/performance.md. Opt-in only. It permits, not
  // requires, the cheaper sums: with config = -1 and M < 512 the promoted plan runs (it measured as
  // fast or faster there), at 512-767 tokens the promoted plan unless a fast one models faster
  // (src/sparse24_heuristic.h), and the decode kernel and the stream-K configurations where chosen.
  bool fast_accum = false;
  // Tuning: a last token column that runs past M loads X's whole TMA box, the rows past M included
  // (what the library did before it loaded only the column's rows), for same-run comparisons
  // (`qsgemm tune sparse24 --whole-last-tile`). Same results; slower. Ignored by the decode kernel.
  bool whole_last_tile = false;
  // Tuning: 0 (default) the library's tile order; 1, 2, 4 or 8 runs bands of that many tiles
  // (CUTLASS's max_swizzle_size, narrower where the shorter side has few tiles) rastered along the
  // weight rows, for same-run comparisons (`qsgemm tune sparse24 --swizzles`). Same results.
  // Other values: kInvalidArgument. Ignored by the decode kernel.
  int max_swizzle = 0;
};

// The plan (qsgemm/linear.h) sparse24_linear runs for Y[M,N] = X[M,K]·Wᵀ with `options` given a
// workspace of at least plan.workspace_bytes: the configuration (options.config, or the heuristic's
// choice with stream-K allowed), the K slices and the workspace (split_k · M · N · 4 for a split,
// CUTLASS's stream-K workspace for a stream-K configuration, 0 otherwise; 0 for M = 0).
// options.workspace is not looked at. Host arithmetic on a GPU with `sm_count` SMs (0: the current
// device's; kUnsupported when there is none) and the current device's DRAM bandwidth (where the
// H100 and the H200 measured differently, the heuristic follows the card's own measurements; the
// H200's without a device: src/sparse24_heuristic.h, Sparse24Profile). Throws kInvalidArgument for
// a bad shape or option, as sparse24_linear would.
LinearPlan sparse24_plan(int64_t M, int64_t N, int64_t K, const Sparse24Options& options, int sm_count = 0);
// sparse24_plan(...).workspace_bytes.
size_t sparse24_linear_workspace_bytes(int64_t M, int64_t N, int64_t K, const Sparse24Options& options,
                                       int sm_count = 0);

// Y = (s_x ⊙ X) · (s_w ⊙ W)ᵀ + bias.
//   x:       e4m3 [M, K] row-major, ld >= K, ld % 16 == 0, base 16-byte aligned. K == w.K.
//   x_scale: float32 device, granularity kPerRow ([M]) or kPerTensor ([1]).
//   w:       a compressed weight (sparse24_compress).
//   bias:    optional: size 0 = none; otherwise [N] (size N, non-null data), dtype fp32 or the
//            output dtype, base 16-byte aligned (the same rule as blockwise_linear's bias).
//   y:       bf16, fp16 or fp32 [M, N] row-major written, ld >= N, 16-byte aligned base and rows. y may
//            not overlap x, w (values, meta, scales), x_scale, bias or the workspace (nor the
//            workspace the inputs); kInvalidArgument.
//   options: see Sparse24Options; a workspace is optional (stream-K configurations and split-K).
// M, N, K <= 2^30. Runs on the device of `stream` (its SM count picks the plan).
// M = 0 is a no-op. Accumulation is float32 with partial sums promoted every 4 sparse MMAs (256 of
// K) unless options.fast_accum; see docs/performance.md for the measured error of both. (The
// decode kernel, sparse24_config(i).skinny, sums fp16 products in float32 in either mode.)
void sparse24_linear(const MatrixView& x, const ScaleView& x_scale, const SparseFp8Weight& w,
                     const VectorView& bias, const MatrixView& y, const Sparse24Options& options,
                     cudaStream_t stream);

// ---- configurations (one table: src/kernels/sm90/sparse24/sm90_sparse24_configs.h) ------------
struct Sparse24Config {
  int tile_m, tile_n, tile_k;  // kernel tile: m = weight rows, n = tokens
  int cluster_m, cluster_n;
  bool cooperative;            // cooperative (2 consumer warpgroups on one tile) or ping-pong
  bool fast_accum;             // FP8 fast accumulation (no float32 promotion in the K loop)
  bool stream_k;               // CUTLASS's stream-K scheduler: needs Sparse24Options::workspace
  // Not CUTLASS: the split-K decode kernel ("skinny_m32_splitk") for M <= 32 tokens (forcing it
  // for a larger M is kInvalidArgument). The weight is the sparse operand of mma.sync in 16-row
  // tiles (tile_m), the tokens n8 tiles up to tile_n = 32, K split over warps and a thread-block
  // cluster chosen per call (cluster_m/n read 1); fp16 products summed in float32, no workspace.
  bool skinny = false;
  // The row's name in the table (sparse24_config_index finds it): e.g. "128x128x256_c1x2_coop",
  // "64x32x256_c1x1_pingpong_fastaccum", "128x32x256_c1x1_coop_streamk", "skinny_m32_splitk".
  std::string name() const;
};
int sparse24_num_configs();
// kInvalidArgument for an index outside [0, sparse24_num_configs()).
Sparse24Config sparse24_config(int index);
// The index of the configuration named `name` (Sparse24Config::name()); kInvalidArgument naming the
// name and listing the valid ones otherwise. Indices shift when rows are added: prefer names.
int sparse24_config_index(const std::string& name);
// Pure heuristic: the configuration index for a problem on a device with `sm_count` SMs (> 0;
// kInvalidArgument otherwise); stream_k: whether the stream-K configurations may be chosen (the
// caller has a workspace for them).
int sparse24_choose_config(int64_t M, int64_t N, int64_t K, int sm_count, bool fast_accum = false,
                           bool stream_k = false);

}  // namespace qsgemm
