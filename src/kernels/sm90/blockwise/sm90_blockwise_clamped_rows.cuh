// The blockwise mainloop with its last token tile moved back inside M (issue #24).
//
// A tile whose rows run past M reads out-of-bounds rows of X's TMA box, and each costs more than a
// valid row: one configuration took 152.3 us at 131 tokens and 91.4 at 231 on the same tiles
// (l3-70b.down, the sweep at 50ca75c), as in the sparse and W4A4 kernels. Here every tile from the
// last token row on computes tokens [M - TM, M), a whole in-bounds tile, like the swapped GEMMs'
// clamped token column (common/clamped_token_column.cuh, whose epilogue wrapper serves this GEMM
// with kTokenMode = 0). The rows two tiles compute get the same operands, tile shape and K order,
// so the same bits.
//
// The blockwise GEMM is not swapped: the tokens are CUTLASS's M, and besides the X box a clamped
// tile shifts its activation scales, which the base's auxiliary warp loads with cp.async,
// predicated on the scale layout's shape. So the clamped tiles get
//   - X's TMA tensor seen from `shift` rows earlier (as the swapped GEMMs' B operand),
//   - the scale tensor's pointer `shift` rows earlier, and a layout of M + shift rows for the
//     predicates (tile `last` then covers rows [M + shift - TM, M + shift), all inside it).
// Only scales with one value per token row can be shifted: x_scale 1x128 and per-row (and the
// 128x192 tile's unit scale, whose strides are 0). A 128x128 block of x scales cannot: a shifted
// tile straddles two blocks (blockwise_config_supports refuses that pair on the clamped rows beyond
// 128 tokens; up to 128 the one row of blocks is read as 1x128 groups with a row stride of 0, which
// the shift leaves in place).
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "kernels/sm90/common/clamped_token_column.cuh"

namespace qsgemm::kernels::sm90_blockwise {

// Base: CUTLASS's sm90 blockwise FP8 mainloop or TwoPartialsBlockwiseMainloop over it.
template <class Base>
struct ClampedRowsMainloop : Base {
  using typename Base::LayoutSFA;
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::TensorStorage;
  using typename Base::TileShape;
  static_assert(!Base::IsTmaLoadSFA && !Base::IsTmaLoadSFB,
                "the scales must be loaded by the auxiliary warp (dynamic strides, sm90_blockwise_gemm.cuh)");
  static constexpr int kTileM = cute::size<0>(TileShape{});
  static constexpr int kScaleRowsPerGroup = Base::ScaleGranularityM;  // 1, or kTileM for the unit scale
  static_assert(kScaleRowsPerGroup == 1 || kScaleRowsPerGroup == kTileM, "x scales must be per token row (or one unit scale)");

  using Arguments = typename Base::Arguments;
  struct Params : Base::Params {
    ClampedTokenColumn rows;
    LayoutSFA layout_SFA_clamped;  // layout_SFA over M + shift rows: the clamped tiles' predicates
    int64_t sfa_shift = 0;         // elements the clamped tiles' scale pointer starts early
  };

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const& problem_shape, Arguments const& args, void* workspace) {
    Params p;
    static_cast<typename Base::Params&>(p) = Base::to_underlying_arguments(problem_shape, args, workspace);
    const int64_t m = cute::get<0>(problem_shape);
    p.rows = clamped_token_column(m, kTileM);
    const auto& l = args.layout_SFA;
    const auto rows = cute::make_shape(cute::get<0, 0>(l.shape()),
                                       static_cast<int>((m + p.rows.shift + kScaleRowsPerGroup - 1) / kScaleRowsPerGroup));
    p.layout_SFA_clamped = cute::make_layout(cute::replace<0>(l.shape(), rows), l.stride());
    // Per-row scales: `shift` rows of stride s_rows; the unit scale: stride 0.
    p.sfa_shift = kScaleRowsPerGroup == 1 ? int64_t{p.rows.shift} * cute::get<0, 1>(l.stride()) : 0;
    return p;
  }

  // Base's tensors (A, B, SFA, SFB), then A and SFA seen from `shift` tokens earlier.
  template <class ProblemShape_MNKL>
  CUTLASS_DEVICE auto load_init(ProblemShape_MNKL const& problem_shape_MNKL, Params const& params) const {
    using X = cute::Underscore;
    auto inputs = Base::load_init(problem_shape_MNKL, params);
    auto [M, N, K, L] = problem_shape_MNKL;
    cute::Tensor mA_mkl = params.tma_load_a.get_tma_tensor(cute::make_shape(M, K, L));
    cute::Tensor gA_shifted = cute::local_tile(cute::domain_offset(cute::make_coord(-params.rows.shift, 0, 0), mA_mkl),
                                               TileShape{}, cute::make_coord(cute::_, cute::_, cute::_),
                                               cute::Step<cute::_1, X, cute::_1>{});
    auto const& mSFA = cute::get<2>(inputs);
    cute::Tensor mSFA_shifted = cute::make_tensor(mSFA.data() + (-params.sfa_shift), mSFA.layout());
    return cute::append(cute::append(inputs, gA_shifted), mSFA_shifted);
  }

  template <class... Ts, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load(Params const& params, MainloopPipeline pipeline, PipelineState smem_pipe_write,
                           cute::tuple<Ts...> const& load_inputs, BlockCoord const& blk_coord,
                           KTileIterator k_tile_iter, int k_tile_count, int thread_idx, uint32_t block_rank_in_cluster,
                           TensorStorage& shared_tensors) {
    const auto base_inputs = cute::take<0, 4>(load_inputs);
    auto [m_coord, n_coord, k_coord, l_coord] = blk_coord;
    if (m_coord >= params.rows.last) {
      const BlockCoord clamped = cute::make_coord(decltype(m_coord)(params.rows.last), n_coord, k_coord, l_coord);
      Base::load(params, pipeline, smem_pipe_write, cute::replace<0>(base_inputs, cute::get<4>(load_inputs)), clamped,
                 k_tile_iter, k_tile_count, thread_idx, block_rank_in_cluster, shared_tensors);
    } else {
      Base::load(params, pipeline, smem_pipe_write, base_inputs, blk_coord, k_tile_iter, k_tile_count, thread_idx,
                 block_rank_in_cluster, shared_tensors);
    }
  }

  // The scales: the base's loader, for the clamped tiles on the shifted tensor with the layout of
  // M + shift rows (the base reads only the scale layouts from its parameters here).
  template <class... Ts, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load_auxiliary(Params const& params, MainloopPipeline pipeline, PipelineState smem_pipe_write,
                                     cute::tuple<Ts...> const& load_inputs, BlockCoord const& blk_coord,
                                     KTileIterator k_tile_iter, int k_tile_count, int thread_idx,
                                     uint32_t block_rank_in_cluster, TensorStorage& shared_tensors) {
    const auto base_inputs = cute::take<0, 4>(load_inputs);
    auto [m_coord, n_coord, k_coord, l_coord] = blk_coord;
    if (m_coord >= params.rows.last) {
      const BlockCoord clamped = cute::make_coord(decltype(m_coord)(params.rows.last), n_coord, k_coord, l_coord);
      typename Base::Params p = params;
      p.layout_SFA = params.layout_SFA_clamped;
      Base::load_auxiliary(p, pipeline, smem_pipe_write, cute::replace<2>(base_inputs, cute::get<5>(load_inputs)),
                           clamped, k_tile_iter, k_tile_count, thread_idx, block_rank_in_cluster, shared_tensors);
    } else {
      Base::load_auxiliary(params, pipeline, smem_pipe_write, base_inputs, blk_coord, k_tile_iter, k_tile_count,
                           thread_idx, block_rank_in_cluster, shared_tensors);
    }
  }
};

}  // namespace qsgemm::kernels::sm90_blockwise
