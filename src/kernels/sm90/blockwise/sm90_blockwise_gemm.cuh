// The sm90 blockwise / groupwise FP8 GEMM: CUTLASS 4.2 collectives composed per configuration
// (sm90_blockwise_configs.h), and the function that runs one. Included by the per-output-dtype
// instantiation files sm90_blockwise_gemm_<dtype>.cu only.
//
//   Y[M,N] = Σ_g (sx[m,g] · sw[n,g]) · X_g · W_gᵀ  (+ bias[n])       (include/qsgemm/blockwise.h)
//
// CUTLASS roles: A = X [M,K] row-major (K-major), B = W [N,K] row-major = "column-major" [K,N]
// (K-major, what 8-bit wgmma requires), D = Y row-major with leading dimension ldy. No C operand.
//
// Mainloops:
//  * Group / block scales: MainloopSm90TmaGmmaWarpSpecializedBlockwiseFP8 (schedules
//    KernelTmaWarpSpecialized{Cooperative,Pingpong}FP8Blockwise, a.k.a. ...FP8BlockScaledAccum).
//    Each 128-wide K tile is accumulated by wgmma into a zeroed register tile, then promoted into
//    the float32 accumulators as acc += sx·sw·tile (CUTLASS's GmmaFP8Accumulation): the scale is
//    applied per group of 128 exactly like the reference, and no FP8 partial sum spans more than
//    128 of K.
//  * Per-row x per-row scales (per-token x per-channel), tiles with the two-partials mainloop
//    (sm90_blockwise_two_partials.cuh): the mainloop's scale tensors are sx [M] and sw [N] with
//    granularity 1 and K stride 0; every 128 of K is promoted as acc += P (no multiply) and after
//    the last K tile acc = (acc · sx[m]) · sw[n]. The epilogue is then the blockwise one. Against
//    scales applied in the epilogue (a column and a row broadcast) this measured 0.84-0.98x the
//    time at K <= 2048 and within the run-to-run spread at K = 4096-8192
//    (bench/results/h200/tuning/ab_perrow_mainloop_scales.txt; the 64x128 ping-pong tile is 8-17 % slower with it at M >= 2048 with long K, where the heuristic
//    does not take that tile, and even or faster at M <= 128 where it does).
//  * Per-row scales on the 128x192 tile (CUTLASS's mainloop, whose registers leave no room for a
//    second partial): one mainloop scale per tile that is always 1 (a device constant read with
//    all strides 0), so every 128 of K is promoted as above and the multiply by 1 is exact; the
//    real scales are applied in the epilogue as a column broadcast (sx[m]) and a row broadcast
//    (sw[n]). The plain FP8 mainloop (MainloopSm90TmaGmmaWarpSpecializedFP8 with
//    mma_promotion_interval = 4) computes the same sums but measured slower on the H200 (M =
//    128-4096, five layers: 3 % geomean on the 128x128 tile, 9 % on the 64-row ping-pong tile;
//    bench/results/h200/tuning/tune_perrow_mainloop.txt); per-channel scales inside the blockwise
//    mainloop (granularity 1 along N) applied at every promotion cost a multiply per accumulator
//    per promotion and measured slower still.
//  * Epilogue: D = acc (+ bias). Calls without a bias run kernels without bias nodes (a row
//    broadcast stages its vector in shared memory behind a barrier in every tile, even for a null
//    pointer): 0.84-0.97x the time at K <= 2048 and 0.94-0.99x at K = 4096-8192 on the 128x128
//    tiles (bench/results/h200/tuning/ab_nobias.txt); one kernel keeps them, see
//    blockwise_group_pair_keeps_bias_nodes.
//
// Scale layouts. The mainloop describes a scale tensor as the CuTe layout
//   ((granularity_mn, rest_mn), (128, k_groups), L)  with strides ((0, s_mn), (0, s_k), s_l)
// and reads it with predicated cp.async (one float per row group and K group), so partial M/N tiles
// and a partial last K group need no padding. CUTLASS's own layout types fix one of s_mn / s_k to a
// static 1 (Sm90BlockwiseScaleConfig, "M-major" / "K-major"). We use dynamic strides for both:
//  * x_scale kGroup1x128 is M-major with a leading dimension (s_mn = 1, s_k = ld >= M), which the
//    static-1 M-major type cannot express (its stride is ceil(M/g)), and
//  * CUTLASS loads a static M-major scale tensor with TMA once a tile holds >= 32 of them
//    (IsTmaLoadSFA), which needs the scale rows 16-byte aligned, i.e. M % 4 == 0 (the reason vLLM
//    pads M). With dynamic strides the mainloop sees no static M-major stride and always takes the
//    cp.async path, which accepts any M and any ld.
// The layouts documented in blockwise.h are read as they are, without a transpose:
//   x kGroup1x128    [ceil(K/128)][ld]           ((1,M),(128,kb))              : ((0,1),(0,ld))
//   x kBlock128x128  [ceil(M/128)][ceil(K/128)]  ((128,ceil(M/128)),(128,kb))  : ((0,kb),(0,1))
//   w kBlock128x128  [ceil(N/128)][ceil(K/128)]  ((128,ceil(N/128)),(128,kb))  : ((0,kb),(0,1))
//   w kGroup1x128    [N][ceil(K/128)]            ((1,N),(128,kb))              : ((0,kb),(0,1))
//
// K tail: TMA zero-fills the columns past K of the last X and W tiles, so a partial last group
// contributes exactly its existing columns times its scale (scale index ceil(K/128)-1 exists).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "kernels/sm90/blockwise/sm90_blockwise_clamped_rows.cuh"
#include "kernels/sm90/blockwise/sm90_blockwise_configs.h"
#include "kernels/sm90/blockwise/sm90_blockwise_last_tile_rows.cuh"
#include "kernels/sm90/blockwise/sm90_blockwise_two_partials.cuh"
#include "kernels/sm90/common/cutlass_smem.cuh"
#include "validate.h"

namespace qsgemm::kernels::sm90_blockwise {

using namespace cute;

// Template value of the scale granularity along M (x) or N (w) that selects per-row scales in the
// epilogue (the mainloop then runs with unit scales, one per tile: blockwise_unit_scale).
inline constexpr int kPerRowScales = 0;

// See the header comment: ((granularity, rest), (128, k_groups), L) with dynamic strides.
template <int kGranularity>
using ScaleLayout = Layout<Shape<Shape<Int<kGranularity>, int32_t>, Shape<_128, int32_t>, int32_t>,
                           Stride<Stride<_0, int32_t>, Stride<_0, int32_t>, int32_t>>;

// ElementD: the output dtype. kGranM / kGranN: scale granularity along M (1 or 128) and N (1 or 128),
// or both kPerRowScales. kBias: the epilogue reads a bias (bias_f32 or bias_out); without it the
// epilogue has no bias vectors at all (see the epilogue comment). kTwoPartials: the mainloop of
// sm90_blockwise_two_partials.cuh instead of CUTLASS's; by default where the configuration table
// asks for it and the weight scales are one per tile (128x128 blocks) or per-row.
template <class ElementD, int kConfig, int kGranM, int kGranN, bool kBias,
          bool kTwoPartials = kBlockwiseConfigs[kConfig].two_partials && (kGranN == kPerRowScales || kGranN == 128)>
struct BlockwiseGemm {
  static constexpr BlockwiseConfig kCfg = kBlockwiseConfigs[kConfig];
  static constexpr bool kPerRow = kGranM == kPerRowScales;
  // Per-row scales are applied by the two-partials mainloop after its last K tile (the epilogue is
  // then the blockwise one); CUTLASS's mainloop (the 128x192 tile) runs with unit scales and the
  // epilogue applies them as a column and a row broadcast.
  static constexpr bool kPerRowEpilogue = kPerRow && !kTwoPartials;
  static constexpr bool kCooperative = kCfg.schedule == BlockwiseSchedule::kCooperative;
  static_assert((kGranM == kPerRowScales) == (kGranN == kPerRowScales), "per-row scales are only paired with per-row scales");
  static_assert(kCfg.tile_k == 128, "the K tile must equal the scale group (128): scales are applied once per K tile");
  // Three float32 register tiles per consumer thread with two partials (accumulators, P0, P1): a
  // cooperative tile is split over 256 threads, a ping-pong tile belongs to one warp group of 128.
  static_assert(!kTwoPartials || 3 * kCfg.tile_m * kCfg.tile_n / (kCooperative ? 256 : 128) <= 192,
                "the two-partials mainloop needs 3 accumulator tiles: at most 192 registers (128x128 / 64x128)");
  static_assert(kPerRow || (kCfg.tile_m % (kPerRow ? 1 : kGranM) == 0 && kCfg.tile_n % (kPerRow ? 1 : kGranN) == 0),
                "a scale block must cover whole tiles (blockwise_config_supports must exclude this pair)");

  using ElementA = cutlass::float_e4m3_t;
  using ElementB = cutlass::float_e4m3_t;
  using ElementAccumulator = float;
  using ElementCompute = float;
  static constexpr int kAlignmentAB = 16;                                   // 16 bytes of e4m3 (TMA)
  static constexpr int kAlignmentD = 128 / cutlass::sizeof_bits<ElementD>::value;  // 16 bytes

  using TileShape = Shape<Int<kCfg.tile_m>, Int<kCfg.tile_n>, Int<kCfg.tile_k>>;
  using ClusterShape = Shape<Int<kCfg.cluster_m>, Int<kCfg.cluster_n>, _1>;

  using MainloopSchedule = cute::conditional_t<kCooperative, cutlass::gemm::KernelTmaWarpSpecializedCooperativeFP8BlockScaledAccum,
                                               cutlass::gemm::KernelTmaWarpSpecializedPingpongFP8BlockScaledAccum>;
  using EpilogueSchedule = cute::conditional_t<kCooperative, cutlass::epilogue::TmaWarpSpecializedCooperative,
                                               cutlass::epilogue::TmaWarpSpecialized>;

  // ---- epilogue: D = [(acc · sx[m]) · sw[n]] + bias_f32[n] + bias_out[n] --------------------------
  // Vectors along N of D are row broadcasts, along M column broadcasts. Null pointers read as zeros
  // (EnableNullptr), so one kernel serves no bias, an fp32 bias and a bias in the output dtype.
  // Alignment 1: the vectors only need element alignment (scalar loads; they are tiny).
  template <class Element>
  using VecN = cutlass::epilogue::fusion::Sm90RowBroadcast<0, TileShape, Element, ElementCompute,
                                                           Stride<_0, _1, int64_t>, 1, true>;
  template <class Element>
  using VecM = cutlass::epilogue::fusion::Sm90ColBroadcast<0, TileShape, Element, ElementCompute,
                                                           Stride<_1, _0, int64_t>, 1, true>;
  template <template <class> class Fn, class Out>
  using Op = cutlass::epilogue::fusion::Sm90Compute<Fn, Out, ElementCompute, cutlass::FloatRoundStyle::round_to_nearest>;
  using Acc = cutlass::epilogue::fusion::Sm90AccFetch;

  // Blockwise: acc + bias_f32.   Per-row: (acc · sx) · sw + bias_f32.
  using BlockwiseInner = cutlass::epilogue::fusion::Sm90EVT<Op<cutlass::plus, ElementCompute>, Acc, VecN<float>>;
  using PerRowInner = cutlass::epilogue::fusion::Sm90EVT<
      Op<cutlass::homogeneous_multiply_add, ElementCompute>,
      cutlass::epilogue::fusion::Sm90EVT<Op<cutlass::multiplies, ElementCompute>, Acc, VecM<float>>, VecN<float>,
      VecN<float>>;
  using Inner = cute::conditional_t<kPerRowEpilogue, PerRowInner, BlockwiseInner>;
  using BiasFusion = cutlass::epilogue::fusion::Sm90EVT<Op<cutlass::plus, ElementD>, Inner, VecN<ElementD>>;
  // Without a bias: D = acc, or D = (acc · sx) · sw (kPerRowEpilogue). A row broadcast stages its
  // vector in shared memory once per tile behind a barrier of the epilogue's threads, even for a null
  // pointer, so the no-bias kernels drop those nodes instead of reading zeros; this matters where
  // the epilogue is a large share of a tile (short K: 512-2048).
  using PlainFusion = cute::conditional_t<
      kPerRowEpilogue,
      cutlass::epilogue::fusion::Sm90EVT<
          Op<cutlass::multiplies, ElementD>,
          cutlass::epilogue::fusion::Sm90EVT<Op<cutlass::multiplies, ElementCompute>, Acc, VecM<float>>, VecN<float>>,
      cutlass::epilogue::fusion::Sm90EVT<Op<cutlass::epilogue::thread::Identity, ElementD>, Acc>>;
  using Fusion = cute::conditional_t<kBias, BiasFusion, PlainFusion>;

  using EpilogueOfTile = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementCompute,
      void, cutlass::layout::RowMajor, kAlignmentD,      // no C operand
      ElementD, cutlass::layout::RowMajor, kAlignmentD, EpilogueSchedule, Fusion>::CollectiveOp;
  // Clamped rows: the last token tile stores through a second set of arguments, shift rows back.
  static constexpr bool kClamped = kCfg.clamped;
  using CollectiveEpilogue = cute::conditional_t<kClamped, ClampedColumnEpilogue<EpilogueOfTile, /*kTokenMode=*/0>, EpilogueOfTile>;

  // ---- mainloop ------------------------------------------------------------------------------------
  // Per-row: sx and sw with granularity 1 (two-partials), or one unit scale per tile (kPerRowEpilogue).
  using LayoutSFA = ScaleLayout<kPerRowEpilogue ? kCfg.tile_m : kPerRow ? 1 : kGranM>;
  using LayoutSFB = ScaleLayout<kPerRowEpilogue ? kCfg.tile_n : kPerRow ? 1 : kGranN>;
  using GmemLayoutA = cute::tuple<cutlass::layout::RowMajor, LayoutSFA>;
  using GmemLayoutB = cute::tuple<cutlass::layout::ColumnMajor, LayoutSFB>;

  using CutlassMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, GmemLayoutA, kAlignmentAB, ElementB, GmemLayoutB,
      kAlignmentAB, ElementAccumulator, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename EpilogueOfTile::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;
  // The cooperative tiles interleave the promotion with the next K tile's MMAs from K = 4096; the
  // ping-pong tile, whose warp groups take turns on the tensor pipe, keeps the plain order.
  using TileMainloop =
      cute::conditional_t<kTwoPartials, TwoPartialsBlockwiseMainloop<CutlassMainloop, kPerRow, kCooperative>, CutlassMainloop>;
  static_assert(!kClamped || kGranM == 1 || kPerRow, "x scales in 128x128 blocks cannot be clamped");
  using ClampedOrTileMainloop = cute::conditional_t<kClamped, ClampedRowsMainloop<TileMainloop>, TileMainloop>;
  // A last token tile partly past M loads only its rows of X (sm90_blockwise_last_tile_rows.cuh).
  using CollectiveMainloop = LastTileRowsMainloop<ClampedOrTileMainloop, kClamped>;

  // Default tile scheduler (persistent, no workspace).
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

  // Scale layout of one operand with `rows` rows (M for x, N for w), granularity `g` along the rows,
  // strides (s_rows between row groups, s_k between K groups) and `batches` K slices s_l apart.
  template <class Layout_>
  static Layout_ scale_layout(int rows, int k_groups, int32_t s_rows, int32_t s_k, int batches = 1, int32_t s_l = 0) {
    constexpr int g = size<0, 0>(Layout_{});
    const int row_groups = (rows + g - 1) / g;
    return make_layout(make_shape(make_shape(Int<g>{}, row_groups), make_shape(_128{}, k_groups), batches),
                       make_stride(make_stride(_0{}, s_rows), make_stride(_0{}, s_k), s_l));
  }

  // Split-K (a.splits = S > 1) is CUTLASS's batch mode L = S over K slices of the whole groups:
  // batch l reads groups [l·kbs, (l+1)·kbs) with kbs = floor(K/128) / S (an L stride of Ks = 128·kbs
  // elements, so 16-byte aligned for TMA) of X, W and their scales, and writes the float32 slice l
  // of y = [S][M][ldy]. A partial last group (K % 128 columns) is left to the reduction kernel.
  static typename Gemm::Arguments arguments(const BlockwiseGemmArgs& a) {
    const int M = a.M, N = a.N, K = a.K, kb = (K + 127) / 128;
    const int S = a.splits;
    const int kbs = S > 1 ? K / 128 / S : kb, Ks = S > 1 ? 128 * kbs : K;
    using StrideA = typename Kernel::StrideA;
    using StrideB = typename Kernel::StrideB;
    using StrideD = typename Kernel::StrideD;
    const StrideA dA = make_stride(a.ldx, _1{}, S > 1 ? int64_t(Ks) : int64_t(M) * a.ldx);
    const StrideB dB = make_stride(a.ldw, _1{}, S > 1 ? int64_t(Ks) : int64_t(N) * a.ldw);
    const StrideD dD = make_stride(a.ldy, _1{}, int64_t(M) * a.ldy);
    const auto* ptr_a = static_cast<const ElementA*>(a.x);
    const auto* ptr_b = static_cast<const ElementB*>(a.w);

    typename TileMainloop::Arguments mainloop{};
    if constexpr (kPerRowEpilogue) {
      const float* one = blockwise_unit_scale(a.device);  // every scale of the mainloop reads this 1.0f
      mainloop = {ptr_a, dA, ptr_b, dB, one, scale_layout<LayoutSFA>(M, kbs, 0, 0, S, 0), one,
                  scale_layout<LayoutSFB>(N, kbs, 0, 0, S, 0)};
    } else if constexpr (kPerRow) {
      // sx [M] and sw [N], the same for every K group (stride 0 along K) and every K slice.
      mainloop = {ptr_a, dA, ptr_b, dB, a.x_scale, scale_layout<LayoutSFA>(M, kbs, 1, 0, S, 0), a.w_scale,
                  scale_layout<LayoutSFB>(N, kbs, 1, 0, S, 0)};
    } else {
      // Row groups along M: x kGroup1x128 is M-major with leading dimension ld (or one row of x
      // blocks, row stride 0 and ld 1, up to 128 tokens); x kBlock128x128 is row-major over
      // [M blocks][K groups]. Along N both weight layouts are row-major over K groups.
      // A K slice starts kbs groups further along K (src/blockwise.cpp checks ld · kb < 2^31).
      const bool x_m_major = kGranM == 1;
      const auto ld_sx = static_cast<int32_t>(a.ld_x_scale);
      const LayoutSFA sfa = x_m_major ? scale_layout<LayoutSFA>(M, kbs, a.x_scale_row_stride, ld_sx, S, kbs * ld_sx)
                                      : scale_layout<LayoutSFA>(M, kbs, kb, 1, S, kbs);
      const LayoutSFB sfb = scale_layout<LayoutSFB>(N, kbs, kb, 1, S, kbs);
      mainloop = {ptr_a, dA, ptr_b, dB, a.x_scale, sfa, a.w_scale, sfb};
    }
    // sx: the per-token operand of the per-row epilogue (kPerRowEpilogue).
    const auto fusion_arguments = [&](const float* sx) {
      typename Fusion::Arguments fusion{};
      const auto* bias_out = static_cast<const ElementD*>(a.bias_out);
      if constexpr (kPerRowEpilogue && kBias) {
        fusion = {
            {                                               // (acc · sx) · sw + bias_f32
                {{}, {sx, 1.0f, {}}, {}},                   //   acc · sx[m]
                {a.w_scale, 1.0f, {}},                      //   sw[n]
                {a.bias_f32, 0.0f, {}},                     //   bias_f32[n]
                {}},
            {bias_out, ElementD(0), {}},                    // + bias_out[n]
            {}};
      } else if constexpr (kPerRowEpilogue) {
        fusion = {
            {{}, {sx, 1.0f, {}}, {}},                       // (acc · sx[m])
            {a.w_scale, 1.0f, {}},                          //   · sw[n]
            {}};
      } else if constexpr (kBias) {
        fusion = {
            {{}, {a.bias_f32, 0.0f, {}}, {}},               // acc + bias_f32[n]
            {bias_out, ElementD(0), {}},                    // + bias_out[n]
            {}};
      }
      // else D = acc: the fusion has no arguments
      return fusion;
    };
    auto* y = static_cast<ElementD*>(a.y);
    const typename EpilogueOfTile::Arguments epilogue{fusion_arguments(a.x_scale), nullptr, {}, y, dD};
    typename CollectiveEpilogue::Arguments kernel_epilogue{};
    if constexpr (kClamped) {
      // The clamped tile is the last tile of M + shift rows that start shift rows before y and sx;
      // split-K slices keep their stride.
      const int64_t shift = clamped_token_column(M, kCfg.tile_m).shift;
      kernel_epilogue = {epilogue, {fusion_arguments(a.x_scale - shift), nullptr, {}, y - shift * a.ldy, dD}};
    } else {
      kernel_epilogue = epilogue;
    }
    typename CollectiveMainloop::Arguments kernel_mainloop{};
    static_cast<typename TileMainloop::Arguments&>(kernel_mainloop) = mainloop;
    kernel_mainloop.whole_last_tile = a.whole_last_tile;
    cutlass::KernelHardwareInfo hw;
    hw.device_id = a.device;
    hw.sm_count = a.sm_count;  // > 0: CUTLASS does not query the device on every call
    typename Gemm::Arguments args{S > 1 ? cutlass::gemm::GemmUniversalMode::kBatched : cutlass::gemm::GemmUniversalMode::kGemm,
                                  {M, N, Ks, S},
                                  kernel_mainloop,
                                  kernel_epilogue,
                                  hw};
    args.scheduler.max_swizzle_size = a.swizzle;
    args.scheduler.raster_order = static_cast<cutlass::gemm::kernel::detail::RasterOrderOptions>(a.raster);
    return args;
  }

  static void run(const BlockwiseGemmArgs& a, cudaStream_t stream) {
    const char* fn = "blockwise_linear";
    const std::string name = kCfg.name();
    const typename Gemm::Arguments args = arguments(a);
    cutlass::Status st = Gemm::can_implement(args);
    if (st != cutlass::Status::kSuccess)
      detail::fail(fn, Status::kUnsupported, "",
                   detail::cat("CUTLASS can_implement refused M=", a.M, " N=", a.N, " K=", a.K, " for config ", name,
                               ": ", cutlassGetStatusString(st)));
    const size_t workspace = Gemm::get_workspace_size(args);
    if (workspace != 0)
      detail::fail(fn, Status::kInternal, "",
                   detail::cat("config ", name, " needs a ", workspace, "-byte workspace; blockwise_linear allocates none"));
    // The dynamic shared-memory limit is a per-kernel, per-device attribute: raise it once per
    // device, not per call (GemmUniversalAdapter::initialize would set it on every call).
    detail::set_cutlass_smem_limit_once<Kernel>(fn, a.device);
    typename Kernel::Params params = Kernel::to_underlying_arguments(args, nullptr);
    st = Gemm::run(params, stream);
    detail::check_launch(fn, name.c_str());
    if (st != cutlass::Status::kSuccess)
      detail::fail(fn, Status::kCudaError, "",
                   detail::cat("CUTLASS launch failed for config ", name, ": ", cutlassGetStatusString(st)));
  }
};

// Runs configuration kConfig for the granularity pair of `a`.
template <class ElementD, bool kBias, int kConfig>
void run_config(const BlockwiseGemmArgs& a, cudaStream_t stream) {
  using G = ScaleGranularity;
  const bool w_block = a.gw == G::kBlock128x128;
  if (a.gx == G::kPerRow && a.gw == G::kPerRow)
    return BlockwiseGemm<ElementD, kConfig, kPerRowScales, kPerRowScales, kBias>::run(a, stream);
  if constexpr (!kBlockwiseConfigs[kConfig].per_row_only) {
    if (a.gx == G::kGroup1x128 && w_block) return BlockwiseGemm<ElementD, kConfig, 1, 128, kBias>::run(a, stream);
    // Without a bias, run_blockwise_gemm sends this pair on this configuration to the bias kernel
    // (blockwise_group_pair_keeps_bias_nodes): a kernel must not be instantiated in two files.
    if constexpr (kBias || !blockwise_group_pair_keeps_bias_nodes(kConfig))
      if (a.gx == G::kGroup1x128 && a.gw == G::kGroup1x128) return BlockwiseGemm<ElementD, kConfig, 1, 1, kBias>::run(a, stream);
  }
  if constexpr (!kBlockwiseConfigs[kConfig].per_row_only && !kBlockwiseConfigs[kConfig].clamped &&
                kBlockwiseConfigs[kConfig].tile_m % 128 == 0) {
    if (a.gx == G::kBlock128x128 && (w_block || a.gw == G::kGroup1x128))
      return w_block ? BlockwiseGemm<ElementD, kConfig, 128, 128, kBias>::run(a, stream)
                     : BlockwiseGemm<ElementD, kConfig, 128, 1, kBias>::run(a, stream);
  }
  detail::fail("blockwise_linear", Status::kInternal, "",
               detail::cat("config ", kBlockwiseConfigs[kConfig].name(), " is not instantiated for x_scale ",
                           granularity_name(a.gx), " with w_scale ", granularity_name(a.gw)));
}

// Runs configuration `config` with (kBias) or without a bias epilogue; one instantiation per output
// dtype and kBias in its own file (sm90_blockwise_gemm_<dtype>[_bias].cu).
template <class ElementD, bool kBias>
void run_for_output(const BlockwiseGemmArgs& a, int config, cudaStream_t stream) {
  // Configuration kSkinnyConfig (3) is not CUTLASS: run_blockwise_gemm sends it to run_blockwise_skinny.
  static_assert(kBlockwiseNumConfigs == 7, "add the new configuration to this switch");
  switch (config) {
    case 0: return run_config<ElementD, kBias, 0>(a, stream);
    case 1: return run_config<ElementD, kBias, 1>(a, stream);
    case 2: return run_config<ElementD, kBias, 2>(a, stream);
    case 4: return run_config<ElementD, kBias, 4>(a, stream);
    case 5: return run_config<ElementD, kBias, 5>(a, stream);
    case 6: return run_config<ElementD, kBias, 6>(a, stream);
    default: break;
  }
  detail::fail("blockwise_linear", Status::kInternal, "", detail::cat("config index ", config, " is not in the table"));
}

}  // namespace qsgemm::kernels::sm90_blockwise
