// The decode-sized ("skinny", M <= 32 tokens) 2:4 sparse FP8 GEMM:
//
//   Y[M,N] = (sx ⊙ X) · (sw ⊙ W)ᵀ + bias       (include/qsgemm/sparse24.h, compressed W of docs/formats.md §4)
//
// At a few tokens the GEMM is a stream over the compressed weight (N·K/2 value bytes plus N·K/8
// metadata bytes) and the tensor cores idle. CUTLASS's sparse tiles give one CTA per 64 weight rows
// over the whole K: 20 CTAs on 132 SMs for a 1280-row tensor-parallel shard. Like the blockwise
// skinny kernel (sm90_blockwise_skinny.cu) this one
//  * puts 16·MT weight rows on each warp as the sparse A operand of mma.sp m16n8k32 and the tokens
//    in T n8 tiles as B, so tokens are padded only to a multiple of 8. The e4m3 operands are
//    converted to fp16 in registers (exactly: e4m3 is a subset of fp16) and multiplied with float32
//    accumulation: every product is exact and every sum is a float32 sum, with no FP8 accumulation
//    at all. (The e4m3 form, mma.sp m16n8k64 .e4m3, is not a native instruction on sm_90: measured
//    on the H200 it ran 1.3-4x slower than the CUTLASS tiles, slower with every token tile added.)
//  * splits K over the warps of a CTA (interleaved 128-wide panels) and over a thread-block cluster
//    of up to 8 CTAs, reduced in shared memory and through distributed shared memory: no workspace,
//    no atomics, and every CTA streams the weight;
//  * keeps S-1 panels in flight per warp with cp.async into a per-thread ring in shared memory (each
//    thread reads back only the bytes it copied: no barrier in the K loop).
// It reads the compressed weight exactly as the CUTLASS configurations do (one format for all).
//
// Register layout of mma.sp m16n8k32 .f16 (PTX ISA; the metadata and B layouts confirmed on the H200
// by a probe against a host reference): thread (g = lane/4, q = lane%4) holds the two kept values of
// the 4-wide k-groups ("hardware groups") q (regs 0, 1) and 4+q (regs 2, 3) of rows g (regs 0, 2)
// and g+8 (regs 1, 3); B: reg r holds k = 2q + 8r + {0, 1} of column g; metadata: with sparsity
// selector s the threads q = 2s, 2s+1 supply it, thread 2s+i the hardware groups 4i .. 4i+3, one
// nibble each (bits 4j..4j+3 for row g, 16+4j.. for row g+8), lower index in the low two bits — the
// nibble of docs/formats.md §4.3.
//
// K order. Any permutation of the 4-wide groups of K, applied to A, its metadata and B alike, leaves
// the product unchanged. Within a 128-wide panel (32 groups, four MMAs j = 0..3), hardware group
// h = qa + 4u of MMA j holds the panel's group a = 8·qa + 2j + u, chosen so that every per-thread
// copy is 16 contiguous bytes:
//  * A: thread q reads groups 8q .. 8q+7 of each of its rows, value bytes 16q .. 16q+15 of the row's
//    64 in the panel; MMA j takes 32-bit word j: its low half as reg 0 / 1, its high half as 2 / 3;
//  * B: thread q (pair p = q/2, parity o = q%2) needs half o (bytes 2o, 2o+1) of the X words
//    8p+2j, 8p+2j+1 (regs 0, 2) and 16+8p+2j, 16+8p+2j+1 (regs 1, 3). Each thread copies X bytes
//    16q .. 16q+15 and 64+16q .. 64+16q+15 (the words of MMAs j = 2o, 2o+1, both halves) and trades
//    the partner's halves with one shuffle per register pair;
//  * metadata: for MMA j, thread 2(j%2)+u supplies nibble u of bytes j, 4+j, 8+j, 12+j of the
//    16-byte panel rows of rows g and g+8.
//
// Measured on the H200 (docs/performance.md): it beats the CUTLASS tiles where their 64-row tiles
// leave most SMs idle at M <= 8 (small weights: 1.1-1.3x), and loses elsewhere, so the heuristic
// takes it there only. It is bound by instructions (fp16 conversions, the metadata reshuffle), not by
// memory: a deeper copy ring made it slower.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/sm90/quant/fp8_common.cuh"  // to_float
#include "kernels/sm90/common/skinny_common.cuh"
#include "kernels/sm90/sparse24/sparse24_skinny.h"
#include "per_device_once.h"
#include "qsgemm/formats.h"
#include "validate.h"

namespace qsgemm::kernels {
namespace {

using namespace skinny;  // cp_async_*, e4m3x4_to_f16x2x2, to_out, reduce_and_store, launch_split_k

constexpr int kPanel = kSparse24SkinnyPanel;  // logical K of one metadata panel (docs/formats.md §4.3)
constexpr int kPanelValueBytes = 64;          // value bytes of one row in one panel
constexpr int kMaxWarps = kSparse24SkinnyMaxWarps;  // warps per CTA, each a K split

// A stage holds 16·(4·MT + 2·T) bytes per thread: the values and the metadata panel rows of 2·MT
// weight rows and two X segments per token tile.
template <int T, int MT>
constexpr int kVecs = 4 * MT + 2 * T;
constexpr int kStages = 4;  // 8 measured slower: the kernel is not waiting on memory
template <int T, int MT>
constexpr int kSmemBytes = kMaxWarps * kStages * kVecs<T, MT> * 32 * 16;

struct SkinnyParams {
  int M, N, K, kp;           // kp = ceil(K / 128) panels
  const uint8_t* x;
  int64_t ldx;
  const uint8_t* values;     // [N][K/2]
  const uint8_t* meta;       // panels of [rows_padded][16]
  int64_t meta_panel_bytes;  // rows_padded · 16
  const float* sx;
  int sx_scalar;
  const float* sw;
  int sw_scalar;
  const void* bias;          // [N] fp32 or the output dtype, or null
  int bias_f32;
  void* y;
  int64_t ldy;
  int KW;
};

// d += A·B, one sparse m16n8k32 step with fp16 operands and float32 accumulation; kSel: the
// sparsity selector (which thread pair of each quad supplies the metadata).
template <int kSel>
__device__ __forceinline__ void mma_sp(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[4], uint32_t e) {
  asm volatile(
      "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, %13;"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e), "n"(kSel));
}

// The low nibbles of the four bytes of v, packed into 16 bits (byte i's nibble at bits 4i).
__device__ __forceinline__ uint32_t pack_low_nibbles(uint32_t v) {
  v &= 0x0F0F0F0Fu;
  v = (v | (v >> 4)) & 0x00FF00FFu;
  return (v | (v >> 8)) & 0x0000FFFFu;
}

// Byte j of each word of a 16-byte panel row (`sel` picks it from a word pair), shifted right by
// `shift` bits (0 or 4: the nibble).
__device__ __forceinline__ uint32_t meta_bytes(const uint4& m, uint32_t sel, uint32_t shift) {
  return __byte_perm(__byte_perm(m.x, m.y, sel), __byte_perm(m.z, m.w, sel), 0x5410) >> shift;
}

// The metadata register of one MMA from the panel rows of rows g (mg, bits 0-15) and g+8 (mh,
// bits 16-31): nibble i is the selected nibble of byte j of word i (x, y, z, w).
__device__ __forceinline__ uint32_t meta_register(const uint4& mg, const uint4& mh, uint32_t sel, uint32_t shift) {
  return pack_low_nibbles(meta_bytes(mg, sel, shift)) | (pack_low_nibbles(meta_bytes(mh, sel, shift)) << 16);
}

// Grid: (row_ctas, C) with clusters of (1, C, 1); block: 32·KW threads; dynamic shared memory
// kSmemBytes<T, MT>. Warp w takes panels w + KW·rank, stepping by KW·C.
template <int T, int MT, class OutT>
__global__ void __launch_bounds__(kMaxWarps * 32) sparse24_skinny(const SkinnyParams p) {
  constexpr int S = kStages, NV = kVecs<T, MT>;
  extern __shared__ uint4 ring[];  // [warp][stage][NV][32 lanes]

  const int warp = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  const int g = lane >> 2, q = lane & 3;
  const int C = static_cast<int>(gridDim.y), rank = static_cast<int>(blockIdx.y);
  const int split = rank * p.KW + warp, splits = C * p.KW;
  const int n_panels = split < p.kp ? (p.kp - split + splits - 1) / splits : 0;

  const int row_base = static_cast<int>(blockIdx.x) * 16 * MT;
  uint4* my = ring + static_cast<size_t>(warp) * S * NV * 32 + lane;
  const uint32_t my_smem = static_cast<uint32_t>(__cvta_generic_to_shared(my));

  // Sources of this thread's copies in the first panel of its split; each advances by a fixed step
  // per panel. Vector v of a stage: values of row (mt, h) at v = 2·mt + h (row 16·mt + g + 8·h);
  // the metadata panel row of the same row at v = 2·MT + 2·mt + h; X segment c of token tile t at
  // v = 4·MT + 2·t + c. A row past N (token past M) is read from row N-1 (M-1) with size 0: zero-fill
  // from an address inside the operand. The metadata rows exist up to rows_padded (a multiple of 64
  // that 16·MT divides), padding included, so they are always read.
  const int half_k = p.K / 2;
  // This thread's value chunk is bytes 16q .. 16q+15 of a panel row (groups 8q .. 8q+7); its X
  // segments are bytes 16q .. 16q+15 and 64 bytes on.
  const int xq = 16 * q;
  const int64_t values_step = static_cast<int64_t>(splits) * kPanelValueBytes;
  const int64_t meta_step = static_cast<int64_t>(splits) * p.meta_panel_bytes;
  const int64_t x_step = static_cast<int64_t>(splits) * kPanel;
  const uint8_t* vp[MT][2];
  int vbytes[MT][2];
  const uint8_t* mp[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row_base + 16 * mt + 8 * h + g;
      vp[mt][h] = p.values + static_cast<int64_t>(min(row, p.N - 1)) * half_k + split * kPanelValueBytes + 16 * q;
      vbytes[mt][h] = row < p.N ? 16 : 0;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h)
      mp[mt][h] = p.meta + static_cast<int64_t>(split) * p.meta_panel_bytes +
                  static_cast<int64_t>(row_base + 16 * mt + 8 * h + g) * 16;
  }
  const uint8_t* xp[T];
  int xbytes[T];
#pragma unroll
  for (int t = 0; t < T; ++t) {
    const int m = 8 * t + g;
    xp[t] = p.x + static_cast<int64_t>(min(m, p.M - 1)) * p.ldx + static_cast<int64_t>(split) * kPanel + xq;
    xbytes[t] = m < p.M ? 16 : 0;
  }

  auto issue = [&](int i) {  // the i-th panel of this warp into stage i % S
    const int panel = split + i * splits;
    const uint32_t stage = my_smem + static_cast<uint32_t>((i % S) * NV * 32 * 16);
    auto dst = [&](int v) { return stage + static_cast<uint32_t>(v * 32 * 16); };
    // Whether this thread's segments lie inside K (K % 32 == 0: each is all in or all out). Only the
    // last panel can be partial; a segment past K is zero-filled from the operand's base.
    const int k0 = panel * kPanel;
    const bool v_in = k0 + 32 * q < p.K;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
        cp_async_cg(dst(2 * mt + h), v_in ? vp[mt][h] : p.values, v_in ? vbytes[mt][h] : 0);
#pragma unroll
      for (int h = 0; h < 2; ++h) cp_async_cg(dst(2 * MT + 2 * mt + h), mp[mt][h], 16);
    }
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const bool x_in = k0 + xq + 64 * c < p.K;
#pragma unroll
      for (int t = 0; t < T; ++t)
        cp_async_ca(dst(4 * MT + 2 * t + c), x_in ? xp[t] + 64 * c : p.x, x_in ? xbytes[t] : 0);
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      vp[mt][0] += values_step;
      vp[mt][1] += values_step;
      mp[mt][0] += meta_step;
      mp[mt][1] += meta_step;
    }
#pragma unroll
    for (int t = 0; t < T; ++t) xp[t] += x_step;
  };

  float acc[MT][T][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int t = 0; t < T; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][t][e] = 0.0f;

#pragma unroll
  for (int i = 0; i < S - 1; ++i) {  // prologue: S-1 panels in flight (empty commits keep the count)
    if (i < n_panels) issue(i);
    cp_async_commit();
  }
  // The metadata this thread supplies: MMAs j = 2·jj + q/2 (jj = 0, 1), nibble q%2 of byte j of
  // the words x, y, z, w of the panel rows of rows g (bits 0-15) and g+8 (16-31).
  const int o = q & 1;
  const uint32_t meta_shift = 4u * static_cast<uint32_t>(o);
  uint32_t meta_sel[2];
#pragma unroll
  for (int jj = 0; jj < 2; ++jj) {
    const uint32_t j = static_cast<uint32_t>(2 * jj + (q >> 1));
    meta_sel[jj] = j | ((4u + j) << 4);
  }
  const uint32_t own_sel = o ? 0x7632u : 0x5410u, give_sel = o ? 0x5410u : 0x7632u;

  for (int i = 0; i < n_panels; ++i) {
    if (i + S - 1 < n_panels) issue(i + S - 1);
    cp_async_commit();
    cp_async_wait<S - 1>();  // panel i has landed (this thread's copies; nobody else reads them)

    const uint4* stage = my + (i % S) * NV * 32;
    // B halves: own[t][n] / got[t][n] pack (reg 0 | reg 2) for n = 0, 1 (MMAs 2·o + n of this
    // thread's copy, 2·(1-o) + n of the partner's) and (reg 1 | reg 3) for n = 2, 3.
    uint32_t own[T][4], got[T][4];
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const uint4 P = stage[(4 * MT + 2 * t) * 32], Q = stage[(4 * MT + 2 * t + 1) * 32];
      const uint32_t w[4][2] = {{P.x, P.y}, {P.z, P.w}, {Q.x, Q.y}, {Q.z, Q.w}};
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        own[t][n] = __byte_perm(w[n][0], w[n][1], own_sel);
        got[t][n] = __shfl_xor_sync(0xFFFFFFFFu, __byte_perm(w[n][0], w[n][1], give_sel), 1);
      }
    }
    uint32_t e[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const uint4 mg = stage[(2 * MT + 2 * mt) * 32], mh = stage[(2 * MT + 2 * mt + 1) * 32];
#pragma unroll
      for (int jj = 0; jj < 2; ++jj)
        e[mt][jj] = meta_register(mg, mh, meta_sel[jj], meta_shift);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const bool mine = (j >> 1) == o;
      uint32_t b[T][4];
#pragma unroll
      for (int t = 0; t < T; ++t) {
        e4m3x4_to_f16x2x2(mine ? own[t][j & 1] : got[t][j & 1], b[t][0], b[t][2]);
        e4m3x4_to_f16x2x2(mine ? own[t][2 + (j & 1)] : got[t][2 + (j & 1)], b[t][1], b[t][3]);
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        // A: word j of the row's 16 bytes, low half -> reg 0 (row g) / 1 (row g+8), high -> 2 / 3.
        uint32_t a[4];
        e4m3x4_to_f16x2x2(reinterpret_cast<const uint32_t*>(&stage[(2 * mt) * 32])[j], a[0], a[2]);
        e4m3x4_to_f16x2x2(reinterpret_cast<const uint32_t*>(&stage[(2 * mt + 1) * 32])[j], a[1], a[3]);
#pragma unroll
        for (int t = 0; t < T; ++t) {
          if (j & 1)
            mma_sp<1>(acc[mt][t], a, b[t], e[mt][j >> 1]);
          else
            mma_sp<0>(acc[mt][t], a, b[t], e[mt][j >> 1]);
        }
      }
    }
  }
  cp_async_wait<0>();
  // The partial tile below overwrites the start of this warp's ring, which other lanes copied into
  // and read from: every lane must be past its last read and copy first.
  __syncwarp();

  // ---- reduction: warps of the CTA, then CTAs of the cluster; rank 0 writes Y -------------------------
  constexpr int kWarpFloats = S * NV * 32 * 4;  // one warp's ring in floats
  static_assert(MT * T * 4 * 32 <= kWarpFloats, "a warp's partial tile must fit in its ring");
  reduce_and_store<MT, T, kWarpFloats>(acc, reinterpret_cast<float*>(ring), warp, lane, p.KW, row_base, p.N, p.M,
                                       [&](float v, int row, int tok) {
                                         v = v * __ldg(p.sx + (p.sx_scalar ? 0 : tok)) * __ldg(p.sw + (p.sw_scalar ? 0 : row));
                                         if (p.bias)
                                           v += p.bias_f32 ? __ldg(static_cast<const float*>(p.bias) + row)
                                                           : to_float<OutT>(static_cast<const OutT*>(p.bias)[row]);
                                         static_cast<OutT*>(p.y)[static_cast<int64_t>(tok) * p.ldy + row] = to_out<OutT>(v);
                                       });
}

template <int T, int MT, class OutT>
void launch(const SkinnyParams& p, int row_ctas, int C, int device, cudaStream_t stream) {
  static detail::PerDeviceOnce once;  // kernel attributes are per device
  launch_split_k(sparse24_skinny<T, MT, OutT>, p, once, device, row_ctas, C, p.KW, kSmemBytes<T, MT>,
                 stream, "sparse24_linear", "cudaLaunchKernelEx(skinny sparse kernel)");
}

template <class OutT>
void launch_for_tokens(const SkinnyParams& p, const Sparse24SkinnyShape& s, int device, cudaStream_t stream) {
  switch (s.T) {
    case 1: return launch<1, 1, OutT>(p, s.row_ctas, s.C, device, stream);
    case 2: return launch<2, 1, OutT>(p, s.row_ctas, s.C, device, stream);
    default: return launch<4, 1, OutT>(p, s.row_ctas, s.C, device, stream);
  }
}

}  // namespace

void run_sparse24_skinny(const Sparse24GemmArgs& a, cudaStream_t stream) {
  if (a.m_tok > kSparse24SkinnyMaxM)
    detail::fail("sparse24_linear", Status::kInvalidArgument, "options.config",
                 detail::cat("the skinny configuration serves M <= ", kSparse24SkinnyMaxM, "; got M=", a.m_tok));
  const Sparse24SkinnyShape s = sparse24_skinny_shape(a.m_tok, a.n_out, a.k, a.sm_count);
  SkinnyParams p;
  p.M = static_cast<int>(a.m_tok);
  p.N = static_cast<int>(a.n_out);
  p.K = static_cast<int>(a.k);
  p.kp = static_cast<int>((a.k + kPanel - 1) / kPanel);
  p.x = a.x;
  p.ldx = a.ldx;
  p.values = a.w_values;
  p.meta = a.w_meta;
  p.meta_panel_bytes = static_cast<int64_t>(sparse24_meta_bytes(a.n_out, a.k)) / p.kp;
  p.sx = a.x_scale;
  p.sx_scalar = a.x_scale_scalar ? 1 : 0;
  p.sw = a.w_scale;
  p.sw_scalar = a.w_scale_scalar ? 1 : 0;
  p.bias = a.bias;
  p.bias_f32 = a.bias_dtype == DType::kF32 ? 1 : 0;
  p.y = a.y;
  p.ldy = a.ldy;
  p.KW = s.KW;
  switch (a.y_dtype) {
    case DType::kBF16: launch_for_tokens<__nv_bfloat16>(p, s, a.device, stream); break;
    case DType::kF16: launch_for_tokens<__half>(p, s, a.device, stream); break;
    case DType::kF32: launch_for_tokens<float>(p, s, a.device, stream); break;
    default:
      detail::fail("sparse24_linear", Status::kInternal, "y", detail::cat("no kernel for output dtype ", dtype_name(a.y_dtype)));
  }
  detail::check_launch("sparse24_linear", "skinny sparse kernel");
}

}  // namespace qsgemm::kernels
