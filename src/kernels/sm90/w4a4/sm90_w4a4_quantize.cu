// The INT4 group quantizer of the W4A4 family (w4a4_pack_weight, w4a4_quantize_activations), with the
// low-rank down-projection X2 = X·L1ᵀ fused: X is read from global memory once.
//
// bf16 X (the common case) runs sm90_w4a4_quantize_bf16_kernel (described above it): 64 rows per CTA,
// chunks of 128 columns through a TMA ring in wgmma's layout, X2 on wgmma, a row's chunks split over
// slices (a cluster whose partial X2 tiles meet in distributed shared memory, added in slice order:
// deterministic, no workspace, no atomics), the grid sized from the device's occupancy.
// fp16 / fp32 X run the reference-shaped kernel, sm90_w4a4_quantize_kernel: one CTA of 256 threads
// owns kRows = 16 rows and walks K in chunks of 128 columns (one group of 128 or two of 64; D1 % 64
// == 0, so a chunk is whole groups, the last possibly one group of 64):
//  * the X chunk goes to shared memory as float (rows padded to 129 floats: no bank conflicts when a
//    warp reads two rows), the L1 chunk [r][128] as bf16 (rows padded to 130: 65 words, so 32
//    consecutive rows fall in 32 banks);
//  * each warp quantizes two rows: lane l holds columns 4l..4l+3, the group amax is a shuffle
//    reduction over 16 (group 64) or 32 (group 128) lanes; s = amax/7 (1 for amax 0, at least
//    FLT_MIN), q = clamp(rint(x/s), -8, 7) with IEEE division (__fdiv_rn) — the operations of
//    int4_scale_from_amax / int4_quantize, so the codes and scales are bit-identical to the CPU;
//  * X2: each thread accumulates up to 8 outputs (row i, rank j) over the chunk with scalar float32
//    FMAs in ascending k (fp16 / fp32 values that bf16 cannot hold: no bf16 tensor-core MMA).
// Non-finite inputs are reported through *bad (the packer) as the smallest row-major index.
// Output modes (W4A4QuantArgs::q_e4m3): packed INT4 (two codes per byte), or the e4m3 staging the
// wgmma GEMM reads (one code per byte, the same codes as e4m3 values, exact: e4m3 holds -8..7).
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstring>
#include <utility>

#include "cute/arch/copy_sm90_desc.hpp"
#include "cute/arch/copy_sm90_tma.hpp"
#include "cute/arch/mma_sm90.hpp"
#include "cute/arch/mma_sm90_gmma_ext.hpp"  // the n24 / n40 / n48 / n56 shapes
#include "cute/tensor.hpp"
#include "cutlass/arch/barrier.h"
#include "kernels/sm90/common/tma_map.h"
#include "kernels/sm90/w4a4/sm90_w4a4_configs.h"
#include "kernels/sm90/w4a4/sm90_w4a4_ptx.cuh"
#include "kernels/sm90/w4a4/sm90_w4a4_quant_tile.cuh"
#include "per_device_once.h"
#include "validate.h"
#include "qsgemm/w4a4.h"

namespace qsgemm::kernels {
namespace {

using namespace w4a4_ptx;

constexpr int kRows = 16;
constexpr int kChunk = 128;
constexpr int kThreads = 256;
constexpr int kXPitch = kChunk + 1;   // floats
constexpr int kLPitch = kChunk + 2;   // bf16
constexpr int kMaxOut = kRows * kW4A4MaxRank / kThreads;  // X2 outputs per thread
static_assert(kRows * kW4A4MaxRank % kThreads == 0, "X2 outputs divide evenly over the threads");

static_assert(kRows * kChunk / 8 == kThreads, "one 8-element vector of X per thread per chunk");

// 8 consecutive elements as floats (16-byte aligned for 16-bit types, 32-byte for fp32).
__device__ __forceinline__ void load8(const float* p, float (&v)[8]) {
  const float4 a = __ldg(reinterpret_cast<const float4*>(p)), b = __ldg(reinterpret_cast<const float4*>(p) + 1);
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
__device__ __forceinline__ void load8(const __half* p, float (&v)[8]) {
  const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
  const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    v[2 * i] = f.x, v[2 * i + 1] = f.y;
  }
}

__device__ __forceinline__ int int4_code(float x, float s) {
  const float r = rintf(__fdiv_rn(x, s));  // ties to even, as nearbyint in the default mode
  return r > 7.0f ? 7 : (r < -8.0f ? -8 : static_cast<int>(r));
}

// The e4m3 byte of an INT4 code q in -8..7 (exact: e4m3 holds every integer up to 16), as
// fp8_e4m3_encode(q) (qsgemm/formats.h): 0 -> 0x00, 1 -> 0x38, ..., -8 -> 0xD0.
__device__ __forceinline__ uint32_t e4m3_of_code(int q) {
  return static_cast<uint32_t>(__nv_cvt_float_to_fp8(static_cast<float>(q), __NV_SATFINITE, __NV_E4M3));
}

// One warp quantizes one row's 128-column chunk starting at c0: lane l holds columns c0 + 4l .. +3
// in v. The group amax is a shuffle reduction over 16 (group 64) or 32 (group 128) lanes; every lane
// must call this (the shuffles), also for a row or columns outside the matrix (which write nothing).
__device__ __forceinline__ void quantize_lane_values(const W4A4QuantArgs& a, int64_t r, int64_t c0, int lane,
                                                     const float (&v)[4]) {
  const int64_t c = c0 + 4 * lane;
  float amax = 0.0f;
#pragma unroll
  for (int u = 0; u < 4; ++u) amax = fmaxf(amax, fabsf(v[u]));
#pragma unroll
  for (int off = 8; off >= 1; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, off));
  if (a.group == 128) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 16));
  if (r >= a.rows || c >= a.cols) return;  // after the shuffles: every lane takes part in them
  const float s = amax > 0.0f ? fmaxf(__fdiv_rn(amax, 7.0f), FLT_MIN) : 1.0f;
  const int q0 = int4_code(v[0], s), q1 = int4_code(v[1], s), q2 = int4_code(v[2], s), q3 = int4_code(v[3], s);
  if (a.q_e4m3) {  // the e4m3 staging: one code per byte, the same codes (docs/formats.md §5)
    const uint32_t bytes = e4m3_of_code(q0) | (e4m3_of_code(q1) << 8) | (e4m3_of_code(q2) << 16) |
                           (e4m3_of_code(q3) << 24);
    *reinterpret_cast<uint32_t*>(a.q + r * a.ldq + c) = bytes;  // c % 4 == 0, ldq % 16 == 0: 4-byte aligned
  } else {
    const uint16_t packed = static_cast<uint16_t>((q0 & 0xF) | ((q1 & 0xF) << 4) | ((q2 & 0xF) << 8) | ((q3 & 0xF) << 12));
    *reinterpret_cast<uint16_t*>(a.q + r * a.ldq + c / 2) = packed;  // c % 4 == 0: 2-byte aligned
  }
  if ((4 * lane) % a.group == 0) a.scales[r * a.s_row + (c / a.group) * a.s_grp] = s;
}

template <class InT>
__global__ void __launch_bounds__(kThreads) sm90_w4a4_quantize_kernel(const W4A4QuantArgs a) {
  __shared__ float xs[kRows][kXPitch];
  __shared__ __align__(16) uint16_t ls[kW4A4MaxRank * kLPitch];

  const InT* x = static_cast<const InT*>(a.x);
  const uint16_t* l1 = static_cast<const uint16_t*>(a.l1);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int rank = a.rank;

  float acc[kMaxOut];
#pragma unroll
  for (int q = 0; q < kMaxOut; ++q) acc[q] = 0.0f;

  for (int64_t c0 = 0; c0 < a.cols; c0 += kChunk) {
    __syncthreads();  // the previous chunk's readers are done
    {  // X: one vector of 8 elements per thread (16-byte rows: validated; cols % 64 == 0, so a
       // vector is wholly inside or outside the matrix)
      const int i = tid / (kChunk / 8), k = (tid % (kChunk / 8)) * 8;
      const int64_t r = r0 + i, c = c0 + k;
      float v[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
      if (r < a.rows && c < a.cols) {
        load8(x + r * a.ldx + c, v);
        if (a.bad != nullptr)
#pragma unroll
          for (int u = 0; u < 8; ++u)
            if (!isfinite(v[u])) {
              atomicMin(a.bad, static_cast<unsigned long long>(r * a.cols + c + u));
              break;
            }
      }
#pragma unroll
      for (int u = 0; u < 8; ++u) xs[i][k + u] = v[u];
    }
    for (int e = tid; e < rank * (kChunk / 8); e += kThreads) {  // L1: 8 bf16 per load
      const int j = e / (kChunk / 8), k = (e % (kChunk / 8)) * 8;
      const int64_t c = c0 + k;
      const uint4 u = c < a.cols ? __ldg(reinterpret_cast<const uint4*>(l1 + j * a.ld_l1 + c)) : make_uint4(0, 0, 0, 0);
      uint32_t* d = reinterpret_cast<uint32_t*>(ls + j * kLPitch + k);  // 4-byte aligned: 260·j + 2·k
      d[0] = u.x;
      d[1] = u.y;
      d[2] = u.z;
      d[3] = u.w;
    }
    __syncthreads();

    // ---- quantize: warp w owns rows w and w + 8 of the tile ----------------------------------------
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
      const int i = warp + 8 * rr;
      float v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) v[u] = xs[i][4 * lane + u];
      quantize_lane_values(a, r0 + i, c0, lane, v);
    }

    // ---- X2 partial sums over this chunk --------------------------------------------------------
    if (rank > 0) {
#pragma unroll
      for (int q = 0; q < kMaxOut; ++q) {
        const int o = tid + kThreads * q;
        if (o < kRows * rank) {
          const int i = o / rank, j = o % rank;
          float s = acc[q];
          for (int k = 0; k < kChunk; ++k)
            s = fmaf(xs[i][k], __bfloat162float(__ushort_as_bfloat16(ls[j * kLPitch + k])), s);
          acc[q] = s;
        }
      }
    }
  }

  auto store_x2 = [&](int64_t r, int j, float v) {
    if (r >= a.rows) return;
    if (a.x2_f32)
      static_cast<float*>(a.x2)[r * a.ld_x2 + j] = v;
    else
      static_cast<__nv_bfloat16*>(a.x2)[r * a.ld_x2 + j] = __float2bfloat16_rn(v);
  };
  if (rank > 0) {
#pragma unroll
    for (int q = 0; q < kMaxOut; ++q) {
      const int o = tid + kThreads * q;
      if (o >= kRows * rank) continue;
      store_x2(r0 + o / rank, o % rank, acc[q]);
    }
  }
}

// ---- bf16 X: 64 rows per CTA, a TMA ring in wgmma's layout, X2 on wgmma ----------------------------
// The kernel above is the reference-shaped one (fp16 / fp32 X). bf16 X, the common case, runs this
// one. The quantizer is bound by instruction issue long before DRAM unless each element costs few
// instructions, so everything but the arithmetic of the codes is taken off the threads:
//  * a CTA owns 64 rows and walks its slice of the row's 128-column chunks through a ring that
//    thread 0 fills by TMA (two 64-column boxes of X, two of L1 [r][64] per chunk; rows past L and
//    columns past D1 arrive as zeros), one mbarrier per stage;
//  * the ring is in the layout the bf16 wgmma reads (K-major, 128-byte swizzle: the TMA boxes are
//    CuTe's Layout_K_SW128_Atom tiles), so X2 += X·L1ᵀ is a few wgmma per chunk and warp group (up
//    to rank 64 the warp groups split K, above it the ranks), issued asynchronously before the
//    thread quantizes;
//  * quantize: a thread takes 32 values of one row, half of a group of 64 (two lanes share a group;
//    group 128: four), four conflict-free 16-byte shared loads, the group amax by 1 (2) shuffles (the
//    fixed cost per group is spread over 32 values), s = amax / 7 and per value x / s as q = a·y,
//    e = fma(-b, q, a), q' = fma(e, y, q) with y = RN(1/b) (Markstein: q' = RN(a/b) exactly, the IEEE
//    quotient the CPU rounds, for 2^-97 <= amax <= 2^100; other amax take __fdiv_rn), rint by adding
//    and subtracting 1.5·2^23 (ties to even; the low nibble of the sum's bits is the two's-complement
//    code); a lane pair swaps pieces so that each stores two adjacent ones (whole sectors). No clamp:
//    |x| <= amax and s = RN(amax/7) give |x/s| <= 7 up to one rounding, so every finite input rounds
//    into -7..7 (non-finite activations have unspecified codes; the packer reports them);
//  * a row's chunks are split over slices (gridDim.y): with the down-projection a cluster of up to 16
//    CTAs whose partial X2 tiles meet in distributed shared memory, CTA c adding rows c, c + S, ... in
//    slice order (deterministic; no workspace, no atomics); at small L the rank is split over
//    gridDim.z too (each z the X2 of r/Z ranks; z = 0 also quantizes), so a decode-size call streams
//    L1 from many SMs; without the down-projection, independent slices. bf16_grid picks the shape
//    from the device's occupancy.
using w4a4_quant::kBox;
using w4a4_quant::kSmemAlign;
using w4a4_quant::kStageXBytes;
constexpr int kQRows = w4a4_quant::kRows;
static_assert(w4a4_quant::kChunk == kChunk && w4a4_quant::kThreads == kThreads, "one chunk and block size");
constexpr int kQuantPieces = 4;  // 16-byte pieces (8 values) of one group that a thread quantizes per chunk
static_assert(kQRows * kChunk / 8 == kQuantPieces * kThreads, "one quantize step per thread per chunk");
inline int bf16_smem_bytes(int nr) { return w4a4_quant::smem_bytes(nr); }

// The tensor maps of a launch: X [L][D1] in boxes of 64 x 64, L1 [r][D1] in boxes of (rank part) x 64.
struct QuantMaps {
  CUtensorMap x;
  CUtensorMap l1;
};

// Eight rounded values t (x/s + 1.5·2^23) as codes: e4m3 bytes (x: values 0-3, y: 4-7) or packed
// nibbles (x; even column in the low nibble).
__device__ __forceinline__ uint2 codes8(bool e4m3, const float* t) {
  constexpr float kMagic = 0x1.8p23f;
  if (e4m3) {
    uint32_t w[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const __nv_fp8x2_storage_t lo = __nv_cvt_float2_to_fp8x2(
          make_float2(__fadd_rn(t[4 * h], -kMagic), __fadd_rn(t[4 * h + 1], -kMagic)), __NV_SATFINITE, __NV_E4M3);
      const __nv_fp8x2_storage_t hi = __nv_cvt_float2_to_fp8x2(
          make_float2(__fadd_rn(t[4 * h + 2], -kMagic), __fadd_rn(t[4 * h + 3], -kMagic)), __NV_SATFINITE, __NV_E4M3);
      w[h] = static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
    }
    return make_uint2(w[0], w[1]);
  }
  uint32_t w = 0;
#pragma unroll
  for (int u = 0; u < 8; ++u) w |= (__float_as_uint(t[u]) & 0xFu) << (4 * u);
  return make_uint2(w, 0);
}

__device__ __forceinline__ float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xFFFF0000u); }

// Where one thread's quantize step writes, advanced chunk by chunk: its row's codes at the chunk's
// first column (q) and its group's scale (s); null for a row outside the matrix or a CTA that does
// not quantize (and then never written through).
struct QuantOut {
  uint8_t* q = nullptr;
  float* s = nullptr;
};

// The down-projection's MMA: wgmma m64nNk16, bf16 x bf16 -> float32, both operands K-major in shared
// memory with the 128-byte swizzle, by descriptor. Descriptors are built here rather than by CuTe's
// partition, which recomputes them per instruction: start address (bytes / 16) in bits 0-13, leading
// byte offset 1 (unused with a swizzle), stride byte offset 1024 / 16 (8 rows of 128 bytes), layout
// 128-byte swizzle (1 << 62).
template <int N>
struct QuantWgmma;
#define QSGEMM_W4A4_QUANT_WGMMA(N)                                                                        \
  template <>                                                                                             \
  struct QuantWgmma<N> {                                                                                  \
    using Op = cute::SM90::GMMA::MMA_64x##N##x16_F32BF16BF16_SS<cute::GMMA::Major::K, cute::GMMA::Major::K>; \
  };
QSGEMM_W4A4_QUANT_WGMMA(16)
QSGEMM_W4A4_QUANT_WGMMA(24)
QSGEMM_W4A4_QUANT_WGMMA(32)
QSGEMM_W4A4_QUANT_WGMMA(40)
QSGEMM_W4A4_QUANT_WGMMA(48)
QSGEMM_W4A4_QUANT_WGMMA(56)
QSGEMM_W4A4_QUANT_WGMMA(64)
#undef QSGEMM_W4A4_QUANT_WGMMA

template <class Op, int... I>
__device__ __forceinline__ void wgmma_ss(uint64_t da, uint64_t db, float (&d)[sizeof...(I)],
                                         std::integer_sequence<int, I...>) {
  Op::fma(da, db, d[I]..., cute::GMMA::ScaleOut::One);
}

template <int kNr>
__global__ void __launch_bounds__(kThreads, 2) sm90_w4a4_quantize_bf16_kernel(const __grid_constant__ QuantMaps maps,
                                                                               const W4A4QuantArgs a) {
  using Tile = w4a4_quant::Tile<kNr>;
  constexpr int kStages = Tile::kStages;
  extern __shared__ uint8_t qsmem_raw[];
  __shared__ uint64_t full[kStages];  // stage st holds its chunk: TMA transaction bytes
  // The swizzle is a function of the address bits: the ring starts on a 1024-byte boundary.
  const uint32_t raw0 = w4a4_ptx::smem_u32(qsmem_raw);
  uint8_t* const ring = qsmem_raw + ((kSmemAlign - (raw0 & (kSmemAlign - 1))) & (kSmemAlign - 1));
  uint8_t* const l_ring = ring + kStages * kStageXBytes;

  const int tid = threadIdx.x, warp = tid >> 5;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * kQRows;
  const int valid_rows = a.rows - r0 < kQRows ? static_cast<int>(a.rows - r0) : kQRows;
  // This CTA's ranks [j0, j0 + kNr) of the down-projection (gridDim.z parts); part 0 also quantizes.
  const int j0 = static_cast<int>(blockIdx.z) * kNr;
  const bool quantizes = blockIdx.z == 0;
  // This CTA's slice of the chunks: [first, first + nchunks) of the row's ceil(cols / 128).
  const int slices = static_cast<int>(gridDim.y), slice = static_cast<int>(blockIdx.y);
  const int64_t all_chunks = (a.cols + kChunk - 1) / kChunk;
  const int64_t per_slice = (all_chunks + slices - 1) / slices;
  const int64_t first = slice * per_slice;
  const int nchunks = static_cast<int>(first >= all_chunks ? 0 : (all_chunks - first < per_slice ? all_chunks - first : per_slice));

  if (tid == 0) {
    cute::prefetch_tma_descriptor(reinterpret_cast<const cute::TmaDescriptor*>(&maps.x));
    if constexpr (kNr > 0) cute::prefetch_tma_descriptor(reinterpret_cast<const cute::TmaDescriptor*>(&maps.l1));
#pragma unroll
    for (int st = 0; st < kStages; ++st) cutlass::arch::ClusterTransactionBarrier::init(&full[st], 1);
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();
  // Thread 0: chunk ch of the slice into stage st (X streams once: evict first; L1 is re-read by every
  // row block: evict last). Out-of-bounds box elements count as transaction bytes too.
  auto load_chunk = [&](int st, int ch) {
    constexpr uint32_t kBytes = kStageXBytes + Tile::kLBytes;
    cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&full[st], kBytes);
    const int c0 = static_cast<int>((first + ch) * kChunk), row = static_cast<int>(r0);
#pragma unroll
    for (int h = 0; h < kChunk / kBox; ++h) {
      cute::SM90_TMA_LOAD_2D::copy(&maps.x, &full[st], static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_FIRST),
                                   ring + st * kStageXBytes + h * (kQRows * kBox * 2), c0 + h * kBox, row);
      if constexpr (kNr > 0)
        cute::SM90_TMA_LOAD_2D::copy(&maps.l1, &full[st], static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_LAST),
                                     l_ring + st * Tile::kLBytes + h * (kNr * kBox * 2), c0 + h * kBox, j0);
    }
  };

  // Quantize: thread (warp w, lane l) takes row 8w + 4·((l >> 2) & 1) + (l >> 3) of the chunk, box
  // b = (l >> 1) & 1 (columns 64b .. 64b + 63: one group of 64) and half h = l & 1 of it: its pieces
  // w_k = (2b + h + 2k) mod 8, k = 0..3 (the even or the odd pieces of the box; piece w covers columns
  // 64b + 8w .. + 7). Load k of lanes 8j .. 8j + 7 reads rows ρ and ρ + 4 at pieces 2k .. 2k + 3: under
  // the swizzle (16-byte unit ^ row % 8) 8 different 16-byte bank groups, no conflict.
  const int lane = tid & 31;
  const int qrow = 8 * warp + 4 * ((lane >> 2) & 1) + (lane >> 3), box = (lane >> 1) & 1, half = lane & 1;
  const bool g128 = a.group == 128;
  const bool lead = half == 0 && (!g128 || box == 0);  // writes the group's scale
  int qcol[kQuantPieces];  // the pieces' first columns within the chunk
  uint32_t lds[kQuantPieces];  // and their ring offsets (stage 0)
#pragma unroll
  for (int k = 0; k < kQuantPieces; ++k) {
    qcol[k] = kBox * box + 8 * ((2 * box + half + 2 * k) & 7);
    lds[k] = 2u * static_cast<uint32_t>(w4a4_quant::tma_sw128_offset(qrow, qcol[k], kQRows));
  }
  const int q_step = a.q_e4m3 ? kChunk : kChunk / 2;
  const int64_t s_step = (kChunk / a.group) * a.s_grp;
  QuantOut out;
  int64_t col = first * kChunk + kBox * box;  // the first column of this thread's group in the current chunk
  const int64_t qr = r0 + qrow;
  const bool row_ok = qr < a.rows;  // (out advances chunk by chunk: it is never tested for null)
  if (quantizes && row_ok) {
    out.q = a.q + qr * a.ldq + (a.q_e4m3 ? first * kChunk : first * kChunk / 2);
    out.s = a.scales + qr * a.s_row + (col / a.group) * a.s_grp;
  }

  // The MMA. Up to 64 ranks the two warp groups split each chunk's K (warp group g takes box g: four
  // k-steps of m64 n kNr), above 64 its ranks (g takes columns [g·kNr/2, (g + 1)·kNr/2), all eight
  // k-steps): the widest N that fits the registers, so the fewest wgmma. Each thread holds the wgmma
  // D fragment (n8 block j, value e at row 16·warp + lane/4 + 8·(e/2), column 8j + 2·(lane % 4) +
  // e % 2). k-step k's operands start kstep_offset_bytes into the stage (checked on the CPU).
  constexpr bool kKSplit = kNr <= 64;
  constexpr int kMmaN = kKSplit ? kNr : kNr / 2;
  constexpr int kAcc = kNr > 0 ? kMmaN / 2 : 1;
  constexpr int kParts = kKSplit ? 2 : 1;  // partial X2 tiles per CTA
  static_assert(kParts * kQRows * kNr * 4 <= w4a4_quant::ring_bytes(kNr), "the partial X2 tiles fit the ring");
  float acc[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;
  const int wg = __shfl_sync(0xFFFFFFFFu, tid >> 7, 0);  // warp-uniform, and known to be
  const uint32_t x_desc0 = sw128_desc_lo(w4a4_ptx::smem_u32(ring));
  const uint32_t l_desc0 = sw128_desc_lo(w4a4_ptx::smem_u32(l_ring) + (kKSplit ? 0 : wg * kMmaN * (kBox * 2)));

  if (tid == 0)
#pragma unroll
    for (int st = 0; st < kStages - 1; ++st)
      if (st < nchunks) load_chunk(st, st);
  for (int ch = 0; ch < nchunks; ++ch) {
    const int st = ch % kStages;
    if (ch > 0) __syncthreads();  // every thread is done with chunk ch - 1 (its stage is refilled next)
    if (tid == 0 && ch + kStages - 1 < nchunks) load_chunk((ch + kStages - 1) % kStages, ch + kStages - 1);
    cutlass::arch::ClusterTransactionBarrier::wait(&full[st], static_cast<uint32_t>((ch / kStages) & 1));

    if constexpr (kNr > 0) {  // X2 += X_chunk · L1_chunkᵀ, asynchronously while this thread quantizes
      using Op = typename QuantWgmma<kMmaN>::Op;
      const uint32_t xa = x_desc0 + st * (kStageXBytes / 16), la = l_desc0 + st * (Tile::kLBytes / 16);
#pragma unroll
      for (int i = 0; i < kAcc; ++i) cute::warpgroup_fence_operand(acc[i]);
      cute::warpgroup_arrive();
      if constexpr (kKSplit) {
#pragma unroll
        for (int kk = 0; kk < kChunk / 32; ++kk) {
          const int k = (kChunk / 32) * wg + kk;  // box wg
          wgmma_ss<Op>(sw128_desc(xa + w4a4_quant::kstep_offset_bytes(k, kQRows) / 16),
                       sw128_desc(la + w4a4_quant::kstep_offset_bytes(k, kNr) / 16), acc,
                       std::make_integer_sequence<int, kAcc>{});
        }
      } else {
#pragma unroll
        for (int k = 0; k < kChunk / 16; ++k)
          wgmma_ss<Op>(sw128_desc(xa + w4a4_quant::kstep_offset_bytes(k, kQRows) / 16),
                       sw128_desc(la + w4a4_quant::kstep_offset_bytes(k, kNr) / 16), acc,
                       std::make_integer_sequence<int, kAcc>{});
      }
      cute::warpgroup_commit_batch();
    }

    if (quantizes && 8 * warp < valid_rows) {  // (a warp whose eight rows are all past L skips)
      const bool ok = row_ok && col < a.cols;  // the row and the group inside the matrix
      const uint8_t* xs = ring + st * kStageXBytes;
      uint32_t w[4 * kQuantPieces];
#pragma unroll
      for (int k = 0; k < kQuantPieces; ++k) {
        const uint4 u = *reinterpret_cast<const uint4*>(xs + lds[k]);
        w[4 * k] = u.x, w[4 * k + 1] = u.y, w[4 * k + 2] = u.z, w[4 * k + 3] = u.w;
      }
      // The group amax: the magnitudes' bits order as the magnitudes (bf16 pairs, one max per pair).
      __nv_bfloat162 m2 = __habs2(*reinterpret_cast<const __nv_bfloat162*>(&w[0]));
#pragma unroll
      for (int u = 1; u < 4 * kQuantPieces; ++u) m2 = __hmax2(m2, __habs2(*reinterpret_cast<const __nv_bfloat162*>(&w[u])));
      float amax = fmaxf(__low2float(m2), __high2float(m2));
      amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 1));
      if (g128) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 2));
      uint2 cw[kQuantPieces] = {};  // the codes of piece k
      float s = 0.0f;
      if (ok) {  // after the shuffles
        constexpr int kV = 8 * kQuantPieces;
        float v[kV];
#pragma unroll
        for (int u = 0; u < kV / 2; ++u) v[2 * u] = bf16_lo(w[u]), v[2 * u + 1] = bf16_hi(w[u]);
        if (a.bad != nullptr) {  // the packer: the smallest non-finite index of this thread's values
          unsigned long long bad = ~0ull;
          const int64_t rc = qr * a.cols + col - kBox * box;
#pragma unroll
          for (int u = 0; u < kV; ++u)
            if (!isfinite(v[u])) {
              const unsigned long long idx = static_cast<unsigned long long>(rc + qcol[u / 8] + u % 8);
              bad = idx < bad ? idx : bad;
            }
          if (bad != ~0ull) atomicMin(a.bad, bad);
        }
        // s = int4_scale_from_amax(amax) = max(RN(amax/7), FLT_MIN), 1 for amax 0; the codes RN(v/s),
        // rounded to integers by + kMagic (1.5·2^23: ties to even).
        constexpr float kMagic = 0x1.8p23f;
        float t[kV];
        if (amax >= 0x1p-97f && amax <= 0x1p100f) {
          // Both divisions by Markstein's correction, q' = fma(fma(-b, q, a), y, q) with q = a·y and
          // y = RN(1/b), which is RN(a/b) here: for b = 7 (checked for every float mantissa from
          // 2^-100 to 2^101) and for b = s in [2^-100, 2^98].
          constexpr float kSeventh = 1.0f / 7.0f;  // RN(1/7)
          const float q7 = __fmul_rn(amax, kSeventh);
          s = __fmaf_rn(__fmaf_rn(-7.0f, q7, amax), kSeventh, q7);
          const float y = __frcp_rn(s);
#pragma unroll
          for (int u = 0; u < kV; ++u) {
            const float q = __fmul_rn(v[u], y);
            t[u] = __fadd_rn(__fmaf_rn(__fmaf_rn(-s, q, v[u]), y, q), kMagic);
          }
        } else {  // IEEE divisions (also amax 0: s = 1, codes 0)
          s = amax > 0.0f ? fmaxf(__fdiv_rn(amax, 7.0f), FLT_MIN) : 1.0f;
#pragma unroll
          for (int u = 0; u < kV; ++u) t[u] = __fadd_rn(__fdiv_rn(v[u], s), kMagic);
        }
#pragma unroll
        for (int k = 0; k < kQuantPieces; ++k) cw[k] = codes8(a.q_e4m3, t + 8 * k);
      }
      // Adjacent pieces to one thread, so that a store writes whole 32-byte sectors: lane h = 0 of the
      // pair takes pieces 2b + 4j, + 1 (its own and its partner's), h = 1 pieces 2b + 4j + 2, + 3.
#pragma unroll
      for (int j = 0; j < kQuantPieces / 2; ++j) {
        const uint2 send = half ? cw[2 * j] : cw[2 * j + 1];
        uint2 got;
        got.x = __shfl_xor_sync(0xFFFFFFFFu, send.x, 1);
        got.y = a.q_e4m3 ? __shfl_xor_sync(0xFFFFFFFFu, send.y, 1) : 0u;
        const uint2 lo = half ? got : cw[2 * j], hi = half ? cw[2 * j + 1] : got;
        const int c = kBox * box + 8 * ((2 * box + 4 * j + 2 * half) & 7);
        if (!ok) continue;
        if (a.q_e4m3)
          *reinterpret_cast<uint4*>(out.q + c) = make_uint4(lo.x, lo.y, hi.x, hi.y);  // ldq % 16 == 0, c % 16 == 0
        else
          *reinterpret_cast<uint2*>(out.q + c / 2) = make_uint2(lo.x, hi.x);
      }
      if (ok && lead) *out.s = s;
      out.q += q_step;
      out.s += s_step;
      col += kChunk;
    }
    if constexpr (kNr > 0) {
      cute::warpgroup_wait<0>();
#pragma unroll
      for (int i = 0; i < kAcc; ++i) cute::warpgroup_fence_operand(acc[i]);
    }
  }
  if constexpr (kNr > 0) {
    // X2 over the slices: every CTA parks its partial tiles [kParts][64][kNr] (floats) at the start of
    // its ring; CTA c of the cluster adds rows c, c + S, ... over the slices in order 0, 1, ... (and
    // the parts of each in order) and stores them.
    namespace cg = cooperative_groups;
    float* red = reinterpret_cast<float*>(ring);
    __syncthreads();  // every thread is past its last read of the ring
    {
      const int lane = tid & 31, row = 16 * (warp & 3) + (lane >> 2);
      float* mine = red + (kKSplit ? wg * kQRows * kNr : wg * kMmaN) + 2 * (lane & 3);
#pragma unroll
      for (int i = 0; i < kAcc; ++i) mine[(row + 8 * ((i >> 1) & 1)) * kNr + 8 * (i >> 2) + (i & 1)] = acc[i];
    }
    if (slices > 1)
      cg::this_cluster().sync();
    else
      __syncthreads();
    // Four ranks per thread and step (16-byte loads and stores), the loads of four slices issued before
    // their sums (distributed shared memory is far: one at a time would serialize its latency); rows
    // past L are not summed (a decode-size block has one row of 64).
    const int my_rows = (valid_rows - slice + slices - 1) / slices;
    constexpr int kQuads = kNr / 4;
    for (int e = tid; e < my_rows * kQuads; e += kThreads) {
      const int i = slice + slices * (e / kQuads), j = 4 * (e % kQuads);
      const int64_t r = r0 + i;
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      for (int c0 = 0; c0 < slices; c0 += 4) {
        float4 p[4][kParts];
#pragma unroll
        for (int u = 0; u < 4; ++u)
          if (c0 + u < slices) {
            const float* part = slices > 1 ? cg::this_cluster().map_shared_rank(red, c0 + u) : red;
#pragma unroll
            for (int g = 0; g < kParts; ++g) p[u][g] = *reinterpret_cast<const float4*>(part + g * kQRows * kNr + i * kNr + j);
          }
#pragma unroll
        for (int u = 0; u < 4; ++u)
          if (c0 + u < slices)
#pragma unroll
            for (int g = 0; g < kParts; ++g) {  // in slice order, then part order: deterministic
              v.x += p[u][g].x;
              v.y += p[u][g].y;
              v.z += p[u][g].z;
              v.w += p[u][g].w;
            }
      }
      if (a.x2_f32) {
        *reinterpret_cast<float4*>(static_cast<float*>(a.x2) + r * a.ld_x2 + j0 + j) = v;  // 16-byte rows
      } else {
        const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
        *reinterpret_cast<uint2*>(static_cast<__nv_bfloat16*>(a.x2) + r * a.ld_x2 + j0 + j) =
            make_uint2(*reinterpret_cast<const uint32_t*>(&lo), *reinterpret_cast<const uint32_t*>(&hi));
      }
    }
    if (slices > 1) cg::this_cluster().sync();  // the other CTAs' shared memory outlives their readers
  }
}

// The tensor maps of a launch (host): bf16 [rows][cols] at base with ld elements per row, boxes of
// box_rows x 64, the 128-byte swizzle, zeros out of bounds.
cudaError_t encode_bf16_map(CUtensorMap* m, const void* base, int64_t rows, int64_t cols, int64_t ld, int box_rows) {
  return encode_tma_2d(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, base, rows, cols, ld * 2, kBox, box_rows,
                       CU_TENSOR_MAP_SWIZZLE_128B);
}

// How many CTAs of the bf16 kernel fit the device at once: without the down-projection (ctas) and
// with it per rank part 16·j and cluster size c (clusters[j][c], 0 where c is not allowed). Clusters
// do not tile the GPCs as single CTAs do, so the grid is sized by the device's own answer, read
// once per device. Clusters of up to 16 where the device allows that non-portable size (Hopper
// does): at decode sizes the slices of a row are all the parallelism there is.
constexpr int kMaxCluster = 16;
struct QuantOccupancy {
  int sms = 0;
  int ctas = 0;
  int clusters[kW4A4MaxRank / 16 + 1][kMaxCluster + 1] = {};
};

// A launch of the bf16 kernel: grid (row blocks, slices, rank parts), the ring of one rank part, and
// with the down-projection a cluster along the slices. The launch and the occupancy query both
// build it here, so they describe the same thing.
struct Bf16Launch {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute cluster[1] = {};
  Bf16Launch(dim3 grid, int rank_part, bool clustered, cudaStream_t stream) {
    cfg.gridDim = grid;
    cfg.blockDim = dim3(kThreads, 1, 1);
    cfg.dynamicSmemBytes = static_cast<size_t>(bf16_smem_bytes(rank_part));
    cfg.stream = stream;
    cluster[0].id = cudaLaunchAttributeClusterDimension;
    cluster[0].val.clusterDim.x = 1;
    cluster[0].val.clusterDim.y = grid.y;
    cluster[0].val.clusterDim.z = 1;
    cfg.attrs = cluster;
    cfg.numAttrs = clustered ? 1 : 0;
  }
  Bf16Launch(const Bf16Launch&) = delete;  // cfg.attrs points into this object
  Bf16Launch& operator=(const Bf16Launch&) = delete;
};

// The bf16 kernel of a rank part (0 or a multiple of 16 up to kW4A4MaxRank).
using QuantKernel = void (*)(QuantMaps, W4A4QuantArgs);
QuantKernel bf16_kernel(int rank_part) {
  switch (rank_part) {
    case 16: return sm90_w4a4_quantize_bf16_kernel<16>;
    case 32: return sm90_w4a4_quantize_bf16_kernel<32>;
    case 48: return sm90_w4a4_quantize_bf16_kernel<48>;
    case 64: return sm90_w4a4_quantize_bf16_kernel<64>;
    case 80: return sm90_w4a4_quantize_bf16_kernel<80>;
    case 96: return sm90_w4a4_quantize_bf16_kernel<96>;
    case 112: return sm90_w4a4_quantize_bf16_kernel<112>;
    case 128: return sm90_w4a4_quantize_bf16_kernel<128>;
    default: return sm90_w4a4_quantize_bf16_kernel<0>;
  }
}
static_assert(kW4A4MaxRank == 128, "bf16_kernel lists every rank part");

cudaError_t max_clusters(int rank_part, int size, int* n) {
  const Bf16Launch l(dim3(1, static_cast<unsigned>(size), 1), rank_part, true, nullptr);
  return cudaOccupancyMaxActiveClusters(n, bf16_kernel(rank_part), &l.cfg);
}

cudaError_t bf16_setup(int sm_count, QuantOccupancy* o) {
  cudaError_t e = cudaSuccess;
  bool non_portable = true;
  for (int nr = 0; nr <= kW4A4MaxRank && e == cudaSuccess; nr += 16) {
    e = cudaFuncSetAttribute(bf16_kernel(nr), cudaFuncAttributeMaxDynamicSharedMemorySize, bf16_smem_bytes(nr));
    if (e == cudaSuccess && nr > 0 &&
        cudaFuncSetAttribute(bf16_kernel(nr), cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
      non_portable = false;
      (void)cudaGetLastError();  // not this device: portable sizes only
    }
  }
  const int max_cluster = non_portable ? kMaxCluster : 8;
  int per_sm = 0;
  if (e == cudaSuccess)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, bf16_kernel(0), kThreads,
                                                      static_cast<size_t>(bf16_smem_bytes(0)));
  o->sms = sm_count;
  o->ctas = per_sm * sm_count;
  for (int j = 1; j <= kW4A4MaxRank / 16 && e == cudaSuccess; ++j)
    for (int c = 1; c <= max_cluster && e == cudaSuccess; ++c) {
      const cudaError_t q = max_clusters(16 * j, c, &o->clusters[j][c]);
      if (q != cudaSuccess) {  // a size above 8 the device refuses: not used
        if (c <= 8) e = q;
        o->clusters[j][c] = 0;
        (void)cudaGetLastError();
      }
    }
  return e;
}

// The bf16 kernel's grid: 64-row blocks x slices of the chunks x parts of the rank. A CTA's time is
// about its chunks, and CTAs that share an SM share its issue slots (the kernel is bound by them), so
// the pick minimizes waves x chunks per slice with a wave of at most one CTA per SM (the smallest
// slice count of the best): without the down-projection independent slices; with it a cluster of
// slices (sizes the device allows), then the rank split into the most parts (dividing r / 16) that
// add no wave. Measured on the H200 (tuning/w4a4_quantizer_grid.txt): at L = 4096, r = 64, 2
// slices of 16 chunks take 28 µs where 7 of 5 (two CTAs per SM) took 39.
struct QuantGrid {
  int64_t rows = 0, slices = 1;
  int parts = 1;
};
QuantGrid bf16_grid(const W4A4QuantArgs& a, const QuantOccupancy& o) {
  QuantGrid g;
  g.rows = (a.rows + kQRows - 1) / kQRows;
  const int64_t chunks = (a.cols + kChunk - 1) / kChunk;
  const int jr = a.rank / 16;
  // CTAs (rank 0) or clusters of s (rank > 0) that run at full speed at once: what the device holds,
  // at most one CTA per SM (0: not allowed).
  const int64_t sms = o.sms > 0 ? o.sms : 1;
  auto cap = [&](int64_t s) -> int64_t {
    return a.rank > 0 ? std::min<int64_t>(o.clusters[jr][s], sms / s) : std::min<int64_t>(o.ctas > 0 ? o.ctas : 1, sms);
  };
  int64_t best = -1;
  for (int64_t s = 1; s <= chunks && s <= (a.rank > 0 ? kMaxCluster : chunks); ++s) {
    if (cap(s) <= 0 && s > 1) continue;
    const int64_t per_slice = (chunks + s - 1) / s;
    if (s > 1 && (chunks + per_slice - 1) / per_slice < s) continue;  // an empty slice: a smaller s does the same
    const int64_t units = a.rank > 0 ? g.rows : g.rows * s;
    const int64_t cs = cap(s) > 0 ? cap(s) : 1;
    const int64_t cost = ((units + cs - 1) / cs) * per_slice;
    if (best < 0 || cost < best) {
      best = cost;
      g.slices = s;
    }
  }
  if (a.rank > 0) {
    const int64_t c = cap(g.slices) > 0 ? cap(g.slices) : 1, waves = (g.rows + c - 1) / c;
    for (int p = jr; p > 1; --p) {
      if (jr % p != 0) continue;
      const int64_t cp = std::min<int64_t>(o.clusters[jr / p][g.slices], sms / g.slices);  // of rank part 16 * jr / p
      if (cp > 0 && (g.rows * p + cp - 1) / cp <= waves) {
        g.parts = p;
        break;
      }
    }
  }
  return g;
}

}  // namespace

void run_w4a4_quantize(const W4A4QuantArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  const dim3 grid(static_cast<unsigned>((a.rows + kRows - 1) / kRows));  // the fp16 / fp32 kernel
  switch (a.x_dtype) {
    case DType::kBF16: {
      // Kernel attributes and occupancy are per device: set and read once.
      static detail::PerDeviceOnce once;
      static QuantOccupancy occupancy[detail::PerDeviceOnce::kMaxDevices];
      const int device = a.device >= 0 ? a.device : detail::current_device();
      QuantOccupancy local;
      QuantOccupancy& occ = device >= 0 && device < detail::PerDeviceOnce::kMaxDevices ? occupancy[device] : local;
      const int sms = a.sm_count > 0 ? a.sm_count : 132;
      const cudaError_t setup = once.run(device, [&] { return bf16_setup(sms, &occ); });
      if (setup != cudaSuccess) {
        detail::check_cuda(setup, "w4a4 quantizer", "kernel attributes / occupancy");
        return;
      }
      const QuantGrid g = bf16_grid(a, occ);
      const int rank_part = a.rank / g.parts;
      const Bf16Launch l(dim3(static_cast<unsigned>(g.rows), static_cast<unsigned>(g.slices), static_cast<unsigned>(g.parts)),
                         rank_part, a.rank > 0, stream);  // rank 0: independent slices, any number
      QuantMaps maps;
      std::memset(&maps, 0, sizeof(maps));  // l1 stays zero (unused) at rank 0
      cudaError_t e = encode_bf16_map(&maps.x, a.x, a.rows, a.cols, a.ldx, kQRows);
      if (e == cudaSuccess && a.rank > 0) e = encode_bf16_map(&maps.l1, a.l1, a.rank, a.cols, a.ld_l1, rank_part);
      if (e != cudaSuccess) {
        detail::check_cuda(e, "w4a4 quantizer", "cuTensorMapEncodeTiled");
        return;
      }
      e = cudaLaunchKernelEx(&l.cfg, bf16_kernel(rank_part), maps, a);
      detail::check_cuda(e, "w4a4 quantizer", "cudaLaunchKernelEx(bf16 quantizer)");
      break;
    }
    case DType::kF16: sm90_w4a4_quantize_kernel<__half><<<grid, kThreads, 0, stream>>>(a); break;
    default: sm90_w4a4_quantize_kernel<float><<<grid, kThreads, 0, stream>>>(a); break;
  }
}

}  // namespace qsgemm::kernels
