// qsgemm/w4a4.h — fused W4A4 + W16A16 low-rank GEMM on Hopper (sm_90a), with its weight packer and
// its activation quantizer (SVDQuant / LoRA-on-quantized layers):
//
//   Y[L,D] = Σ_g sx[l,g]·sw[d,g]·(X1_g·W1_gᵀ)  +  X2·W2ᵀ  (+ bias)
//
// X1 [L,D1] and W1 [D,D1] are signed INT4 (two per byte, docs/formats.md §5) with one float32 scale
// per row per group of `group` consecutive k (group 64 or 128); X2 [L,r] and W2 [D,r] are the bf16
// low-rank factors (r = 0, 16, ..., 128). In SVDQuant, X2 = X·L1ᵀ is the down-projection of the
// unquantized activation and W2 = L2 the up-projection; for LoRA they are the adapter's factors.
//
// Kernels: INT4 is stored, 8 bits are multiplied (s8 or e4m3), every group's integer sum is exact and
// promoted once per group into float32 accumulators (acc += sx·sw·sum); after the K loop the low-rank term
// runs as bf16 MMAs into the same float32 accumulators, and one epilogue adds the bias and converts.
// No second kernel, no extra pass over Y. Any L >= 1; partial tiles are predicated. Three kernels:
//  * src/kernels/sm90/w4a4/sm90_w4a4_decode.cu, `mma.sync` m16n8k32 s8 with the weight as the A
//    operand and 8 / 16 / 32 tokens per CTA, K split over the CTA's warps, each streaming its slice
//    through registers or a ring of TMA boxes, X1 packed INT4: the heuristic's choice up to 16
//    tokens (a weight stream), and from 17 where its cost model keeps it (narrow layers, few tokens);
//  * src/kernels/sm90/w4a4/sm90_w4a4_gemm.cuh, `mma.sync` m16n8k32 s8 on nibbles of both operands
//    widened in registers, X1 packed INT4: the heuristic's choice at group 128 where its cost
//    model prefers it (wide layers, 17 to ~64 tokens), and for packed X1 above 256 tokens;
//  * src/kernels/sm90/w4a4/sm90_w4a4_wgmma.cuh, CUTLASS's TMA warp-specialized mixed-input mainloop
//    with e4m3·e4m3 → f32 `wgmma` (every code -8..7 and every group sum is exact in it); the INT4
//    weight is widened in registers, the activations are read as e4m3 codes (the "e4m3 staging" of
//    X1, below): the heuristic's choice where its cost model says so (wide layers from
//    ~65 tokens at group 64) and at every shape above 256 tokens.
//
// X1 staging (docs/formats.md §5): the activation quantizer writes X1 either packed (DType::kI4x2,
// [L, D1/2] bytes) or as e4m3 codes (DType::kE4M3, [L, D1], one code per byte as an e4m3 value, the
// same codes). Each configuration reads one of them (w4a4_x1_dtype). Typical use:
//     LinearPlan p = w4a4_plan(L, D, D1, r, {}, 0, group);  // the configuration the heuristic picks
//     DType s = w4a4_x1_dtype(p);                            // kI4x2 or kE4M3 (L and the shape)
//     w4a4_quantize_activations(x, group, l1, x1_as_s, ...); w4a4_linear(x1_as_s, ...);
// w4a4_linear with options.config == -1 picks among the configurations that read x1's dtype, so
// either staging always runs (an e4m3 X1 takes the wgmma kernel).
//
// Every entry point validates its operands before it touches the GPU and throws qsgemm::Error naming
// the operand and the values (qsgemm/error.h). All functions are stream-ordered and never allocate,
// except w4a4_pack_weight (a load-time function: see there).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "qsgemm/linear.h"
#include "qsgemm/quant.h"
#include "qsgemm/tensor.h"

namespace qsgemm {

// The largest low-rank dimension r (a multiple of 16: one bf16 m16n8k16 K-step per 16).
inline constexpr int kW4A4MaxRank = 128;
// Whether `group` is a group size of the W4A4 format: 64 (SVDQuant's default) or 128.
inline constexpr bool w4a4_group_is_valid(int group) { return group == 64 || group == 128; }

// ---- operands and rules common to every entry point (docs/formats.md §5) ----------------------
//   D1 (the reduction dimension, K): D1 > 0 and D1 % group == 0 (whole groups; so D1 % 64 == 0 and
//       every packed row is a whole number of 32-byte chunks).
//   Packed INT4 matrices (x1, w1, the packer's and quantizer's outputs): dtype kI4x2, shape
//       [rows, D1/2] BYTES (two values per byte, even k in the low nibble), row-major, base 16-byte
//       aligned and ld (bytes) % 16 == 0. Stored exactly as ref::quantize_int4_groups writes them:
//       not pre-tiled, so one weight serves every configuration.
//   Scales: float32, device memory, 4-byte aligned, each positive, normal and finite as the
//       packer/quantizer write them (amax/7, or 1 for an all-zero group; never below FLT_MIN).
//       Weight scales sw: row-major [D][D1/group] (dense). Activation scales sx: M-major
//       [D1/group][ld_sx], ld_sx >= L: the scale of (row l, group g) is sx[g*ld_sx + l] (the layout
//       of the FP8 1x128 activation scales, docs/formats.md §2). Caller-given scales are not checked
//       on the device: a zero, negative or non-finite scale gives a wrong (not a trapped) result.
//   Extents: L, D, D1 < 2^31.

// The leading dimension of the activation scales that w4a4_linear reads fastest:
// m_major_scale_ld(L) (qsgemm/quant.h), L rounded up to a multiple of 4. The Python package's
// quantizer allocates its scales with this ld.
inline constexpr int64_t w4a4_x_scale_ld(int64_t L) { return m_major_scale_ld(L); }

// ---- configurations (one table: src/kernels/sm90/w4a4/sm90_w4a4_configs.h) --------------------
int w4a4_num_configs();
// e.g. "128x128x128_w2x4"; kInvalidArgument for an index outside [0, w4a4_num_configs()).
std::string w4a4_config_name(int index);
// The index of the configuration named `name`; kInvalidArgument listing the valid names otherwise.
int w4a4_config_index(const std::string& name);
// The configuration the heuristic prefers over the whole table (src/w4a4_heuristic.h) for weight
// groups of `group` (64 or 128): L <= 8 decode_8x16_k8_ring (a packed weight of at least 90 KiB per
// SM) or decode_8x16_k8, L <= 16 decode_16x16_k8 (also 33..48 at group 64); from 17 tokens a cost
// model of the shape picks decode_32x32_k8 (X1 kI4x2; at group 128 also the mma.sync 32x64 tile) or
// the wgmma row (X1 kE4M3): the wgmma row where its 128x128 tiles fill the SMs (group 64: 57344x8192
// from 65 tokens), the decode row on layers of few 128-row tiles (4096x14336 up to 224 tokens); every
// shape the wgmma row above 256 tokens; 128x128x128_wgmma_coop_clamped, the wgmma row with its last
// token tile clamped inside L, where L > 128 leaves a partial tile with enough of it past L (129..248,
// 257..372, ... tokens). w4a4_linear with options.config == -1 runs this one when x1
// has the dtype it reads (w4a4_x1_dtype), else the heuristic's choice among the rows reading x1's
// dtype (packed X1 above 256 tokens: the mma.sync 32x64 tile). sm_count > 0, L >= 0, D > 0, group 64
// or 128 (kInvalidArgument otherwise).
int w4a4_choose_config(int64_t L, int64_t D, int64_t D1, int rank, int sm_count, int group = 64);
// The X1 dtype configuration `config` reads: DType::kI4x2 (packed, [L, D1/2] bytes) or DType::kE4M3
// (e4m3 codes, [L, D1]). kInvalidArgument for an index outside the table.
DType w4a4_x1_dtype(int config);
// The X1 dtype the plan's configuration reads: quantize the activations into this staging.
DType w4a4_x1_dtype(const LinearPlan& plan);

// The options of w4a4_linear (qsgemm/linear.h):
//   config: -1 (the heuristic) or an index of the table; every configuration gives the same result
//     up to float32 rounding (the integer part is exact in all of them). An explicit configuration
//     must read x1's dtype (w4a4_x1_dtype(config)): kInvalidArgument naming both otherwise.
//   split_k: 0 or 1 (no K split in this family yet; 2..16 is kInvalidArgument).
//   workspace: not used (a non-null one must still be 16-byte aligned).
struct W4A4Options : LinearOptions {};

// The plan w4a4_linear runs for an X1 in the staging w4a4_x1_dtype(plan) reads: the configuration
// (w4a4_choose_config, or options.config), split_k = 1, no workspace. sm_count 0: the current
// device's (kUnsupported when there is none). group: the weight's (64 or 128, D1 % group == 0).
// Same option errors as w4a4_linear.
LinearPlan w4a4_plan(int64_t L, int64_t D, int64_t D1, int rank, const W4A4Options& options, int sm_count = 0,
                     int group = 64);

// ---- the fused GEMM ----------------------------------------------------------------------------
//   x1:      the activation codes, either kI4x2 [L, D1/2] bytes (packed) or kE4M3 [L, D1] (e4m3
//            staging, one code in -8..7 per byte as an e4m3 value; other bytes give an unspecified
//            result); base 16-byte aligned, ld (bytes) % 16 == 0 (TMA rows for the wgmma kernel).
//            Any other dtype (kI8 included) is kInvalidArgument. The configuration must read this
//            dtype (see config above).
//   x_scale: float, M-major [D1/group][ld_x_scale], ld_x_scale >= L; non-null when L > 0. Fastest
//            with ld_x_scale = w4a4_x_scale_ld(L) and a 16-byte aligned base: the decode rows
//            then fetch the scales by TMA (any other ld: 4-byte copies, the same result).
//   w1:      kI4x2 [D, D1/2] bytes (packed weight codes), rules above.
//   w_scale: float, row-major [D][D1/group]; non-null.
//   group:   64 or 128 (kInvalidArgument otherwise, or when D1 % group != 0).
//   x2:      bf16 [L, r], base 16-byte aligned, ld * 2 % 16 == 0. r = x2.cols: 0 <= r <= 128,
//            r % 16 == 0 (kInvalidArgument otherwise). r = 0 (x2 and w2 with 0 columns, data may be
//            null) is plain W4A4.
//   w2:      bf16 [D, r], same rules as x2, the same r.
//   bias:    optional: size 0 = none; otherwise [D] (size D, non-null), fp32 or the output dtype,
//            base 16-byte aligned (the rule of every family).
//   y:       bf16, fp16 or fp32 [L, D], base 16-byte aligned, ld * element size % 16 == 0. Only
//            the [L, D] elements are written. y may not overlap any input (kInvalidArgument).
//   D:       D > 0 and D % 8 == 0 (whole n8 MMA tiles, 16-byte rows of a bf16 y).
// L == 0 is a no-op (after validation). Runs on the device of `stream` (sm_90 required:
// kUnsupported otherwise). Enqueues one kernel; never synchronizes.
void w4a4_linear(const MatrixView& x1, const float* x_scale, int64_t ld_x_scale, const MatrixView& w1,
                 const float* w_scale, int group, const MatrixView& x2, const MatrixView& w2, const VectorView& bias,
                 const MatrixView& y, const W4A4Options& options, cudaStream_t stream);

// ---- the weight packer (load time) --------------------------------------------------------------
// W1 [D, D1] (bf16, fp16 or fp32; base 16-byte aligned, ld * element size % 16 == 0) → packed INT4
// codes w_packed (kI4x2 [D, D1/2], rules above) and scales w_scale (float [D][D1/group], row-major,
// 4-byte aligned): per group s = amax/7 (1 for an all-zero group, at least FLT_MIN), q =
// clamp(rint(x/s), -8, 7) with IEEE division. Bit-identical to ref::quantize_int4_groups.
// NaN or ±Inf anywhere in W1 is kInvalidValue naming the first one (row-major order) by row,
// column and value; the outputs are then unspecified. To report it, the call allocates 8 bytes of
// stream-ordered device memory (cudaMallocAsync) and synchronizes `stream`. Outputs may not overlap
// w or each other. D == 0 is a no-op.
void w4a4_pack_weight(const MatrixView& w, int group, const MatrixView& w_packed, float* w_scale,
                      cudaStream_t stream);

// ---- the activation quantizer, low-rank down-projection fused -----------------------------------
// Reads X [L, D1] once and writes:
//   x1:      the codes (the same rule as the packer's: bit-identical to ref::quantize_int4_groups
//            row by row), by x1's dtype: kI4x2 [L, D1/2] packed, or kE4M3 [L, D1] the e4m3 staging
//            (code q as the e4m3 byte of q, fp8_e4m3_encode(q); byte k of a row = the unpacked nibble
//            k of the packed form). Base 16-byte aligned, ld (bytes) % 16 == 0. Use
//            w4a4_x1_dtype(plan).
//   x_scale: float M-major [D1/group][ld_x_scale], ld_x_scale >= L, 4-byte aligned (w4a4_x_scale_ld(L)
//            for w4a4_linear's fastest layout);
//   x2:      X·L1ᵀ, [L, r], bf16 or fp32 (16-byte aligned base and rows), from the unquantized X,
//            accumulated in float32 (bf16 X: tensor-core MMAs; fp16 / fp32 X: FMAs in ascending k),
//            rounded once to bf16 for a bf16 x2.
// Inputs: x bf16, fp16 or fp32 [L, D1] (base 16-byte aligned, ld * element size % 16 == 0);
//   lora_down L1: bf16 [r, D1] (16-byte aligned base and rows), r = lora_down.rows with the rank
//   rule of w4a4_linear (0..128, multiple of 16); x2 must have r columns. r = 0 (lora_down with 0
//   rows) writes no x2.
// Non-finite activations are not checked: their codes are unspecified. Outputs may not overlap x,
// L1 or each other. L == 0 is a no-op. Stream-ordered, one kernel.
void w4a4_quantize_activations(const MatrixView& x, int group, const MatrixView& lora_down, const MatrixView& x1,
                               float* x_scale, int64_t ld_x_scale, const MatrixView& x2, cudaStream_t stream);
// The same without the down-projection (X2 given by the caller, e.g. a LoRA adapter's).
void w4a4_quantize_activations(const MatrixView& x, int group, const MatrixView& x1, float* x_scale,
                               int64_t ld_x_scale, cudaStream_t stream);

}  // namespace qsgemm
