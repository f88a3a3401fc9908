// The 2:4 sparse FP8 GEMM on sm_90a, composed from CUTLASS 4.2's sparse FP8 mainloop (or our
// two-partials version of it, sm90_sparse24_two_partials.cuh) and an EVT epilogue that applies the
// scales and the bias in the swapped (Yᵀ = W·Xᵀ) coordinates:
//
//   D[i, j] = w_scale[i] * (x_scale[j] * acc[i, j]) + bias[i]      i: weight row, j: token
//
// A (sparse, K-major) = compressed W values + metadata, B (K-major) = X read as column-major,
// D column-major = Y row-major. Scales and bias are broadcasts: w_scale and bias per row of D
// (column vectors), x_scale per column of D (a row vector). Each scale can also be a scalar:
// the broadcasts take a run-time stride flag, so one kernel serves both (no extra instantiation).
// The data-parallel configurations clamp their last token column inside M
// (common/clamped_token_column.cuh), so no tile reads rows of X past M once M >= tile_n.
#pragma once

#include <utility>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/numeric_types.h"
#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "kernels/sm90/sparse24/sm90_sparse24_last_column_rows.cuh"
#include "kernels/sm90/sparse24/sparse24_launch.h"
#include "kernels/sm90/sparse24/sm90_sparse24_two_partials.cuh"
#include "kernels/sm90/common/clamped_token_column.cuh"
#include "kernels/sm90/common/cutlass_smem.cuh"
#include "validate.h"

namespace qsgemm::kernels {

// StreamK: CUTLASS's stream-K tile scheduler (cooperative tiles only) with its heuristic
// decomposition and deterministic reduction; it needs a workspace (Sparse24GemmArgs::workspace).
// TwoPartials: the mainloop of sm90_sparse24_two_partials.cuh (two partial accumulator tiles in
// flight) instead of CUTLASS's; same float32 sums in the same order, so the same output bits.
template <int TM, int TN, int TK, int CM, int CN, bool Cooperative, bool FastAccum, class ElementOut, class ElementBias,
          bool StreamK = false, bool TwoPartials = false>
struct Sm90Sparse24Gemm {
  static_assert(!StreamK || Cooperative, "CUTLASS's stream-K scheduler runs on the cooperative kernel only");
  static_assert(!TwoPartials || (!FastAccum && TK == 256), "two partials: promoted accumulation, one promotion per 256-wide K tile");
  // Accumulators plus two partials: three TM x TN float tiles over the consumer threads (256 for a
  // cooperative tile, 128 for a ping-pong one) must fit in 192 registers a thread (128x192 would need 288).
  static_assert(!TwoPartials || 3 * TM * TN / (Cooperative ? 256 : 128) <= 192,
                "two partials: three accumulator tiles must fit in 192 registers a thread");
  using TileShape = cute::Shape<cute::Int<TM>, cute::Int<TN>, cute::Int<TK>>;
  using ClusterShape = cute::Shape<cute::Int<CM>, cute::Int<CN>, cute::_1>;
  using ElementA = cutlass::float_e4m3_t;
  using ElementB = cutlass::float_e4m3_t;
  using ElementAcc = float;
  // Non-FastAccum schedules: the FP8 mainloop promotes partial sums to float32 every
  // mma_promotion_interval (4) MMAs, i.e. every 256 of K (sparse k64 MMAs); see docs/performance.md.
  // FastAccum schedules let the tensor core accumulate over the whole K instead.
  using KernelSchedule = std::conditional_t<
      Cooperative,
      std::conditional_t<FastAccum, cutlass::gemm::KernelTmaWarpSpecializedCooperativeFP8FastAccum,
                         cutlass::gemm::KernelTmaWarpSpecializedCooperative>,
      std::conditional_t<FastAccum, cutlass::gemm::KernelTmaWarpSpecializedPingpongFP8FastAccum,
                         cutlass::gemm::KernelTmaWarpSpecializedPingpong>>;
  using EpilogueSchedule = std::conditional_t<Cooperative, cutlass::epilogue::TmaWarpSpecializedCooperative,
                                              cutlass::epilogue::TmaWarpSpecialized>;
  using LayoutD = cutlass::layout::ColumnMajor;
  static constexpr int kAlignD = 16 / sizeof(ElementOut);

  // ---- epilogue: D = w_scale ⊙ (x_scale ⊙ acc) + bias --------------------------------------------
  template <class T>
  using ColVec = cutlass::epilogue::fusion::Sm90ColBroadcast<0, TileShape, T, float,
                                                             cute::Stride<bool, cute::_0, int64_t>>;
  using RowVecScale = cutlass::epilogue::fusion::Sm90RowBroadcast<0, TileShape, float, float,
                                                                  cute::Stride<cute::_0, bool, int64_t>>;
  using Acc = cutlass::epilogue::fusion::Sm90AccFetch;
  using ScaleByX = cutlass::epilogue::fusion::Sm90EVT<
      cutlass::epilogue::fusion::Sm90Compute<cutlass::multiplies, float, float, cutlass::FloatRoundStyle::round_to_nearest>,
      RowVecScale, Acc>;
  using Fusion = cutlass::epilogue::fusion::Sm90EVT<
      cutlass::epilogue::fusion::Sm90Compute<cutlass::homogeneous_multiply_add, ElementOut, float,
                                             cutlass::FloatRoundStyle::round_to_nearest>,
      ColVec<float>, ScaleByX, ColVec<ElementBias>>;

  using CutlassEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassSparseTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, ElementAcc, float, void, LayoutD, kAlignD, ElementOut, LayoutD,
      kAlignD, EpilogueSchedule, Fusion>::CollectiveOp;

  using CutlassMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassSparseTensorOp, ElementA, cutlass::layout::RowMajor, 32, ElementB,
      cutlass::layout::ColumnMajor, 16, ElementAcc, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CutlassEpilogue::SharedStorage))>,
      KernelSchedule>::CollectiveOp;
  using MainloopBody = std::conditional_t<TwoPartials, TwoPartialsSparseMainloop<CutlassMainloop>, CutlassMainloop>;
  // The data-parallel schedules clamp the last token column inside M (clamped_token_column.cuh);
  // stream-K may sum a tile's K range in pieces, so its rows written twice could differ in the
  // last bit, and it keeps CUTLASS's out-of-bounds tile instead.
  static constexpr bool kClampedColumn = !StreamK;
  // A last token column partly past M loads only its rows of X (sm90_sparse24_last_column_rows.cuh).
  using CollectiveMainloop = Sparse24LastColumnRowsMainloop<
      std::conditional_t<kClampedColumn, ClampedColumnMainloop<MainloopBody>, MainloopBody>, kClampedColumn>;
  using CollectiveEpilogue = std::conditional_t<kClampedColumn, ClampedColumnEpilogue<CutlassEpilogue>, CutlassEpilogue>;

  // void: the default persistent scheduler (no workspace).
  using TileScheduler = std::conditional_t<StreamK, cutlass::gemm::StreamKScheduler, void>;
  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, CollectiveMainloop,
                                                          CollectiveEpilogue, TileScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
  using SparseConfig = typename CollectiveMainloop::SparseConfig;

  static typename Gemm::Arguments arguments(const Sparse24GemmArgs& a) {
    // Split-K: S batches of the same kernel, batch s on K columns [s·K/S, (s+1)·K/S) (whole K tiles),
    // writing the float32 slice s of the workspace. The compressed values keep their row stride K
    // (a K-range of each row, CUTLASS's K-major layout (m, (2, k/2)) : (K, (1, 2)) with a batch
    // stride of K/S logical elements); the metadata's 128-wide K panels are contiguous (docs/formats.md
    // §4.3), so slice s starts s·K/S/128 panels in, which is what fill_layoutE gives for L = S.
    const int S = a.splits;
    const int64_t ks = a.k / S;
    const auto problem = cute::make_shape(static_cast<int>(a.n_out), static_cast<int>(a.m_tok), static_cast<int>(ks), S);
    typename Gemm::Arguments args;
    args.mode = S > 1 ? cutlass::gemm::GemmUniversalMode::kBatched : cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = problem;
    args.mainloop.ptr_A = reinterpret_cast<const ElementA*>(a.w_values);
    using LayoutA = decltype(args.mainloop.layout_a);
    if (S == 1) {
      args.mainloop.layout_a = SparseConfig::fill_layoutA(problem);
    } else {
      const LayoutA sliced = cute::make_layout(
          cute::make_shape(static_cast<int32_t>(a.n_out), cute::make_shape(cute::_2{}, static_cast<int32_t>(ks / 2)), S),
          cute::make_stride(static_cast<int64_t>(a.k), cute::make_stride(cute::_1{}, cute::_2{}), ks));
      args.mainloop.layout_a = sliced;
    }
    args.mainloop.ptr_B = reinterpret_cast<const ElementB*>(a.x);
    args.mainloop.dB = cute::make_stride(static_cast<int64_t>(a.ldx), cute::_1{}, S > 1 ? ks : int64_t(0));
    args.mainloop.ptr_E = reinterpret_cast<const typename CollectiveMainloop::ElementE*>(a.w_meta);
    args.mainloop.layout_e = SparseConfig::fill_layoutE(problem);
    if constexpr (!FastAccum) args.mainloop.mma_promotion_interval = 4;
    args.mainloop.whole_last_tile = a.whole_last_tile;

    // The epilogue over tokens [first, first + m_tok): first = 0, or -shift for a clamped column.
    const auto epilogue_args = [&](int64_t first) {
      typename CutlassEpilogue::Arguments e;
      auto& fusion = e.thread;
      // Fusion = EVT<madd, ColVec w_scale, EVT<mul, RowVec x_scale, Acc>, ColVec bias>
      fusion.op_0 = {a.w_scale, 1.0f, {!a.w_scale_scalar, cute::_0{}, int64_t(0)}};
      fusion.op_1.op_0 = {a.x_scale_scalar ? a.x_scale : a.x_scale + first, 1.0f,
                          {cute::_0{}, !a.x_scale_scalar, int64_t(0)}};
      fusion.op_2 = {static_cast<const ElementBias*>(a.bias), ElementBias(0), {true, cute::_0{}, int64_t(0)}};
      e.ptr_C = nullptr;
      e.ptr_D = static_cast<ElementOut*>(a.y) + first * a.ldy;
      e.dD = cute::make_stride(cute::_1{}, static_cast<int64_t>(a.ldy),
                               S > 1 ? static_cast<int64_t>(a.ldy) * a.m_tok : int64_t(0));
      e.dC = e.dD;
      return e;
    };
    if constexpr (kClampedColumn) {
      args.epilogue.main = epilogue_args(0);
      // Never dereferenced before token M - TN >= 0 (the clamped tile); unused where shift is 0.
      args.epilogue.shifted = epilogue_args(-int64_t{clamped_token_column(a.m_tok, TN).shift});
    } else {
      args.epilogue = epilogue_args(0);
    }
    args.hw_info.device_id = a.device;
    args.hw_info.sm_count = a.sm_count;
    args.scheduler.max_swizzle_size = a.swizzle;
    args.scheduler.raster_order = static_cast<cutlass::gemm::kernel::detail::RasterOrderOptions>(a.raster);
    if constexpr (StreamK) {
      using Scheduler = typename GemmKernel::TileScheduler;
      args.scheduler.decomposition_mode = Scheduler::DecompositionMode::Heuristic;
      args.scheduler.reduction_mode = Scheduler::ReductionMode::Deterministic;
    }
    return args;
  }

  // Host arithmetic only (a.sm_count must be set).
  static size_t workspace_bytes(const Sparse24GemmArgs& a) { return Gemm::get_workspace_size(arguments(a)); }

  static void run(const Sparse24GemmArgs& a, cudaStream_t stream) {
    const char* fn = "sparse24_linear";
    const typename Gemm::Arguments args = arguments(a);

    // CUTLASS's check requires layout_a to be fill_layoutA of the problem, which a K slice of the
    // full-K rows is not (its row stride is K): check the rest with that layout in its place.
    typename Gemm::Arguments check = args;
    check.mainloop.layout_a = SparseConfig::fill_layoutA(args.problem_shape);
    const cutlass::Status can = Gemm::can_implement(check);
    if (can != cutlass::Status::kSuccess)
      detail::fail(fn, Status::kUnsupported, "",
                   detail::cat("CUTLASS can_implement refused M=", a.m_tok, " N=", a.n_out, " K=", a.k, " ldx=", a.ldx,
                               " ldy=", a.ldy, ": ", cutlassGetStatusString(can)));
    // Stream-K: the caller's workspace (src/sparse24.cpp checked its size and alignment); CUTLASS
    // zeroes its barrier flags with cudaMemsetAsync on the stream. The others need none.
    const size_t need = Gemm::get_workspace_size(args);
    if (StreamK ? a.workspace == nullptr || need > a.workspace_bytes : need != 0)
      detail::fail(fn, Status::kInternal, "",
                   detail::cat("configuration needs ", need, " bytes of workspace and was given ", a.workspace_bytes));
    if constexpr (StreamK) {
      const cutlass::Status ws = GemmKernel::initialize_workspace(args, a.workspace, stream);
      if (ws != cutlass::Status::kSuccess)
        detail::fail(fn, Status::kCudaError, "", detail::cat("stream-K workspace set-up failed: ", cutlassGetStatusString(ws)));
    }

    detail::set_cutlass_smem_limit_once<GemmKernel>(fn, a.device);

    typename GemmKernel::Params params = GemmKernel::to_underlying_arguments(args, StreamK ? a.workspace : nullptr);
    const cutlass::Status st = Gemm::run(params, stream);
    if (st != cutlass::Status::kSuccess)
      detail::fail(fn, Status::kCudaError, "", detail::cat("kernel launch failed: ", cutlassGetStatusString(st)));
    detail::check_launch(fn, "sparse GEMM kernel");
  }
};

// Explicit-instantiation helpers, driven by the config table (sm90_sparse24_configs.h): each
// translation unit instantiates the rows of one Sparse24Unit for one output / bias dtype pair.
template <class ElementOut, class ElementBias>
void run_sparse24_config(const Sparse24GemmArgs& a, int config, cudaStream_t stream);

// Row I of kSparse24Configs as a kernel type.
template <int I, class Out, class Bias>
using Sparse24RowGemm =
    Sm90Sparse24Gemm<kSparse24Configs[I].tile_m, kSparse24Configs[I].tile_n, kSparse24Configs[I].tile_k,
                     kSparse24Configs[I].cluster_m, kSparse24Configs[I].cluster_n, kSparse24Configs[I].cooperative,
                     kSparse24Configs[I].fast_accum, Out, Bias, kSparse24Configs[I].unit == Sparse24Unit::kStreamK,
                     kSparse24Configs[I].two_partials>;

// Runs row I when it belongs to unit U (and instantiates it only then); false otherwise.
template <Sparse24Unit U, int I, class Out, class Bias>
bool run_sparse24_row_of_unit(const Sparse24GemmArgs& a, cudaStream_t stream) {
  if constexpr (kSparse24Configs[I].unit == U) {
    Sparse24RowGemm<I, Out, Bias>::run(a, stream);
    return true;
  } else {
    return false;
  }
}
template <Sparse24Unit U, class Out, class Bias, int... I>
void run_sparse24_unit(const Sparse24GemmArgs& a, int config, cudaStream_t stream, std::integer_sequence<int, I...>) {
  const bool ran = ((config == I && run_sparse24_row_of_unit<U, I, Out, Bias>(a, stream)) || ...);
  if (!ran)
    detail::fail("sparse24_linear", Status::kInternal, "config",
                 detail::cat("configuration ", config, " is not instantiated in this unit"));
}
// Every row of unit U for one dtype pair: the body of run_sparse24_config / _wide_config /
// _streamk_config in the sm90_sparse24_gemm_*.cu units.
template <Sparse24Unit U, class Out, class Bias>
void run_sparse24_unit(const Sparse24GemmArgs& a, int config, cudaStream_t stream) {
  run_sparse24_unit<U, Out, Bias>(a, config, stream, std::make_integer_sequence<int, kSparse24NumConfigs>{});
}

// The stream-K rows' workspace sizes for one dtype pair (host arithmetic).
template <int I, class Out, class Bias>
size_t sparse24_row_workspace_bytes(const Sparse24GemmArgs& a) {
  if constexpr (kSparse24Configs[I].unit == Sparse24Unit::kStreamK) return Sparse24RowGemm<I, Out, Bias>::workspace_bytes(a);
  else return 0;
}
template <class Out, class Bias, int... I>
size_t sparse24_unit_workspace_bytes(const Sparse24GemmArgs& a, int config, std::integer_sequence<int, I...>) {
  size_t bytes = 0;
  ((config == I ? (bytes = sparse24_row_workspace_bytes<I, Out, Bias>(a), true) : false) || ...);
  return bytes;
}
template <class Out, class Bias>
size_t sparse24_streamk_unit_workspace_bytes(const Sparse24GemmArgs& a, int config) {
  return sparse24_unit_workspace_bytes<Out, Bias>(a, config, std::make_integer_sequence<int, kSparse24NumConfigs>{});
}

// The wide, between, band, cluster and stream-K units' explicit specializations for one dtype pair.
#define QSGEMM_SPARSE24_WIDE_INSTANCE(Out, Bias)                                                      \
  template <>                                                                                         \
  void run_sparse24_wide_config<Out, Bias>(const Sparse24GemmArgs& a, int config, cudaStream_t stream) { \
    run_sparse24_unit<Sparse24Unit::kWide, Out, Bias>(a, config, stream);                             \
  }
#define QSGEMM_SPARSE24_BETWEEN_INSTANCE(Out, Bias)                                                      \
  template <>                                                                                            \
  void run_sparse24_between_config<Out, Bias>(const Sparse24GemmArgs& a, int config, cudaStream_t stream) { \
    run_sparse24_unit<Sparse24Unit::kBetween, Out, Bias>(a, config, stream);                             \
  }
#define QSGEMM_SPARSE24_BAND_INSTANCE(Out, Bias)                                                      \
  template <>                                                                                         \
  void run_sparse24_band_config<Out, Bias>(const Sparse24GemmArgs& a, int config, cudaStream_t stream) { \
    run_sparse24_unit<Sparse24Unit::kBand, Out, Bias>(a, config, stream);                             \
  }
#define QSGEMM_SPARSE24_CLUSTER_INSTANCE(Out, Bias)                                                      \
  template <>                                                                                            \
  void run_sparse24_cluster_config<Out, Bias>(const Sparse24GemmArgs& a, int config, cudaStream_t stream) { \
    run_sparse24_unit<Sparse24Unit::kCluster, Out, Bias>(a, config, stream);                             \
  }
#define QSGEMM_SPARSE24_STREAMK_INSTANCE(Out, Bias)                                                       \
  template <>                                                                                             \
  void run_sparse24_streamk_config<Out, Bias>(const Sparse24GemmArgs& a, int config, cudaStream_t stream) { \
    run_sparse24_unit<Sparse24Unit::kStreamK, Out, Bias>(a, config, stream);                              \
  }                                                                                                       \
  template <>                                                                                             \
  size_t sparse24_streamk_workspace_bytes<Out, Bias>(const Sparse24GemmArgs& a, int config) {             \
    return sparse24_streamk_unit_workspace_bytes<Out, Bias>(a, config);                                   \
  }

}  // namespace qsgemm::kernels
