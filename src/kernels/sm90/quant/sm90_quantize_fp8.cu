// FP8 (e4m3) quantization kernels: per-token / 1x128 groups / static / 128x128 blocks.
// Memory-bound: every thread moves 16-byte chunks of 8 elements, kept as raw bits in registers; the
// group's amax is reduced in registers and shuffles, then the chunks (still in registers) are
// converted again, quantized and stored. Nothing is read twice from memory except in the two-pass
// per-token kernel for rows past 32768 columns (the second read hits L2).
//
// The short-row per-token (K <= 1024) and static kernels launch one wave that fits on the GPU at once (a fixed
// number of blocks per SM, held by __launch_bounds__), and every worker (a warp or a block) walks its
// rows or tiles with the stride of the whole grid, the items split evenly so that all workers end
// together. A worker issues the loads of its next item before it reduces and stores the current one
// (two register sets that take turns, see pipelined()): with one row per block and no prefetch (the
// kernels before), the blocks of a wave all wait for their last load at about the same time, the
// memory queue runs dry at every wave boundary, and the last partial wave runs alone. Per-token rows
// of 1025..32768 columns keep one row per block (quantize_rows_resident): measured on the H200 it
// beat a pipelined multi-row version at 8192x8192 (87 % vs 76 % of copy bandwidth) and tied it at
// 4096x4096 (64-65 %, where the fixed cost of a call dominates). The 1x128 kernel gives each warp one
// tile and launches enough blocks for all of them (quantize_groups_1x128 says why).
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/sm90/quant/fp8_common.cuh"
#include "kernels/sm90/quant/quant_launch.h"
#include "qsgemm/device.h"
#include "validate.h"

namespace qsgemm::kernels {
namespace {

constexpr int kThreads = 256;

// Blocks per SM that the one-wave grids are sized for, held by __launch_bounds__: 4 blocks of 256
// threads (32 warps) leave 64 registers a thread, 3 blocks leave 85. Float chunks take twice the
// registers, so 2 blocks (128 registers). 24-32 warps with 64-128 bytes each in flight is 48-128 KiB
// per SM, 6-17 MiB on 132 SMs: several times the bandwidth-latency product of HBM3e.
template <class T>
constexpr int kBlocks64 = sizeof(T) == 4 ? 2 : 4;
template <class T>
constexpr int kBlocks85 = sizeof(T) == 4 ? 2 : 3;

// X is read once: no L1 allocation, and an L2 evict-first policy, so that its lines are the first to
// go and the lines being written (q, which the GEMM reads next) stay in L2 (ptxas takes the
// .L2::evict_first qualifier only on 32-byte loads; the policy operand does it for 16 bytes). The
// guard is a predicate inside the asm, not a branch around it; a chunk not loaded reads as zeros. Not
// .nc: an ordinary load may not be moved past a barrier, which pipelined() relies on (X is not
// written while the kernel runs, so the two read the same).
template <class T>
__device__ __forceinline__ void load_stream(Chunk8<T>& c, const T* p, bool pred) {
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#pragma unroll
  for (int w = 0; w < Chunk8<T>::kWords; ++w)
    asm volatile(
        "{\n"
        "  .reg .pred p;\n"
        "  setp.ne.b32 p, %5, 0;\n"
        "  mov.b32 %0, 0;\n"
        "  mov.b32 %1, 0;\n"
        "  mov.b32 %2, 0;\n"
        "  mov.b32 %3, 0;\n"
        "  @p ld.global.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %6;\n"
        "}\n"
        // Early clobber: the outputs are zeroed before the address is read.
        : "=&r"(c.raw[w].x), "=&r"(c.raw[w].y), "=&r"(c.raw[w].z), "=&r"(c.raw[w].w)
        : "l"(reinterpret_cast<const uint4*>(p) + w), "r"(static_cast<int>(pred)), "l"(policy));
}

// Max of |x| over the elements of N chunks, and 0: what fmaxf(amax, fabsf(v)) from amax = 0 gives,
// bit for bit, in fewer instructions and registers. For 16-bit types |x| is the word with its two
// sign bits cleared and the max runs on packed pairs (max.bf16x2 / max.f16x2, which, like fmaxf,
// return the other operand for a NaN; exact, subnormals kept), then one float max of the two halves.
// max is exact and drops NaN whatever the order, so no reduction order below changes a bit. It also
// leaves no float conversion for the compiler to keep alive until the quantization converts again.
template <int N, class T>
__device__ __forceinline__ float chunks_amax(const Chunk8<T>* c) {
  if constexpr (sizeof(T) == 4) {
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      float v[8];
      c[i].to_floats(v);
#pragma unroll
      for (int j = 0; j < 8; ++j) amax = fmaxf(amax, fabsf(v[j]));
    }
    return amax;
  } else {
    using T2 = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
    const auto pair = [](uint32_t w) {
      T2 p;
      memcpy(&p, &w, 4);
      return p;
    };
    T2 m = pair(0u);
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const uint4 w = c[i].raw[0];
      m = __hmax2(__hmax2(m, pair(w.x & 0x7FFF7FFFu)), __hmax2(pair(w.y & 0x7FFF7FFFu), pair(w.z & 0x7FFF7FFFu)));
      m = __hmax2(m, pair(w.w & 0x7FFF7FFFu));
    }
    return fmaxf(to_float<T>(m.x), to_float<T>(m.y));
  }
}

template <class T>
__device__ __forceinline__ void quantize_chunk(const Chunk8<T>& c, uint8_t* q, float inv) {
  float v[8];
  c.to_floats(v);
  store8_fp8(q, v, inv);
}

// Max over the kLanes-lane groups of a warp (kLanes a power of two <= 32); every lane of the warp
// must call it.
template <int kLanes>
__device__ __forceinline__ float lanes_max(float v) {
#pragma unroll
  for (int off = kLanes / 2; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, off));
  return v;
}

// A shared word that holds 0: see pipelined(). Kernels that use it set it first thing.
__device__ __forceinline__ uint32_t* zero_word() {
  __shared__ uint32_t z;
  return &z;
}
__device__ __forceinline__ void set_zero_word() {
  if (threadIdx.x == 0) *zero_word() = 0;
  __syncthreads();
}

// c's words xor-ed with z, which is 0: the same bits, computed only once z is known.
template <class T>
__device__ __forceinline__ void launder(Chunk8<T>& c, uint32_t z) {
#pragma unroll
  for (int w = 0; w < Chunk8<T>::kWords; ++w)
    c.raw[w] = make_uint4(c.raw[w].x ^ z, c.raw[w].y ^ z, c.raw[w].z ^ z, c.raw[w].w ^ z);
}
template <class A, int N>
__device__ __forceinline__ void launder(A (&a)[N], uint32_t z) {
#pragma unroll
  for (int i = 0; i < N; ++i) launder(a[i], z);
}

// A worker's loop over its items first, next(first), ... while valid: load(buf, item, pred) issues the
// loads of an item into a register set (none where pred is false), work(buf, item) reduces and stores
// it. The next item's loads are issued before anything waits on the current ones, so a worker keeps
// one to two items in flight. Two named register sets instead of a copy at the end of the loop: a
// copy would wait for the loads it copies.
//
// ptxas schedules by its own heuristics, and it did put the current item's reduction (which waits for
// its data) above the next item's loads, which then left only when the current data had come. The
// order is held by the memory model instead: the next loads (ordinary loads), then a block barrier
// (a load may not move below it), then a volatile shared load of the zero word (may not move above
// it), which every word of the current item is xor-ed with before any use. The barrier is
// __syncthreads_or, which also tells whether any worker of the block has a next item: all threads of
// the block run the same number of steps, and a worker past its last item runs on with loads and
// stores masked (work() must guard its stores by the item's validity). Named barriers per warp
// would not tie warps together, but ptxas then reserves all 16 barriers of the block, which can
// limit the blocks per SM. The caller calls set_zero_word() first.
template <class Buf, class Item, class Next, class Valid, class Load, class Work>
__device__ __forceinline__ void pipelined(Item item, Next next, Valid valid, Load load, Work work) {
  const auto zero = [] {
    uint32_t z;
    asm volatile("ld.volatile.shared.u32 %0, [%1];"
                 : "=r"(z)
                 : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(zero_word()))));
    return z;
  };
  Buf a, b;
  load(a, item, valid(item));
  for (;;) {
    Item n = next(item);
    bool mine = valid(n);
    load(b, n, mine);
    bool more = __syncthreads_or(mine);
    launder(a, zero());
    work(a, item);
    if (!more) return;
    item = n;
    n = next(item);
    mine = valid(n);
    load(a, n, mine);
    more = __syncthreads_or(mine);
    launder(b, zero());
    work(b, item);
    if (!more) return;
    item = n;
  }
}

// Per-token scales for rows of up to 128 chunks (1024 columns): kLanes lanes per row, kChunks chunks
// per lane and row (chunk i of lane l: columns (i * kLanes + l) * 8 .. +8), and each warp holds
// kSets x (32 / kLanes) rows at once, so that every lane has 4 chunks in flight even for short rows.
// Row j of set s is base + s * (32 / kLanes) + j: a load of a set covers consecutive rows.
template <class T, int kLanes, int kChunks, int kSets>
__global__ void __launch_bounds__(kThreads, kBlocks64<T>) quantize_rows_warp(
    const T* __restrict__ x, int64_t ldx, uint8_t* __restrict__ q, int64_t ldq, int64_t rows, int64_t cols,
    float* __restrict__ scales, int64_t s_row, bool pow2) {
  set_zero_word();
  constexpr int kTeams = 32 / kLanes, kRows = kTeams * kSets;
  const int team = (threadIdx.x & 31) / kLanes, tl = threadIdx.x % kLanes;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * (kThreads / 32) * kRows;
  const int64_t first = (static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32) * kRows;
  pipelined<Chunk8<T>[kSets][kChunks]>(
      first, [&](int64_t b) { return b + stride; }, [&](int64_t b) { return b < rows; },
      // Rows past the end (also those of a worker past its last item) load zeros and store nothing.
      [&](Chunk8<T>(&c)[kSets][kChunks], int64_t b, bool any) {
#pragma unroll
        for (int s = 0; s < kSets; ++s) {
          const int64_t r = b + s * kTeams + team;
#pragma unroll
          for (int i = 0; i < kChunks; ++i) {
            const int64_t col = (i * kLanes + tl) * 8;
            load_stream(c[s][i], x + r * ldx + col, any && r < rows && col < cols);
          }
        }
      },
      [&](const Chunk8<T>(&c)[kSets][kChunks], int64_t b) {
#pragma unroll
        for (int s = 0; s < kSets; ++s) {
          // Every lane reaches the shuffles (rows past the end hold zeros): only the stores are guarded.
          const float amax = lanes_max<kLanes>(chunks_amax<kChunks>(c[s]));
          const float sc = fp8_scale_from_amax(amax, pow2), inv = fp8_inv_scale(sc);
          const int64_t r = b + s * kTeams + team;
          if (r < rows) {
            if (tl == 0) scales[r * s_row] = sc;
#pragma unroll
            for (int i = 0; i < kChunks; ++i) {
              const int64_t col = (i * kLanes + tl) * 8;
              if (col < cols) quantize_chunk(c[s][i], q + r * ldq + col, inv);
            }
          }
        }
      });
}

// One row per block of kRowThreads threads, each holding kChunks chunks of 8 elements in registers:
// all loads of the row are issued before the amax reduction and the row is read from memory once.
// Chunk i of thread t covers columns (i * kRowThreads + t) * 8 .. +8, so each load is coalesced.
template <class T, int kRowThreads, int kChunks>
__global__ void __launch_bounds__(kRowThreads) quantize_rows_resident(const T* __restrict__ x, int64_t ldx,
                                                                      uint8_t* __restrict__ q, int64_t ldq,
                                                                      int64_t cols, float* __restrict__ scales,
                                                                      int64_t s_row, bool pow2) {
  const int64_t r = blockIdx.x;
  const T* xr = x + r * ldx;
  Chunk8<T> c[kChunks];
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int64_t col = (static_cast<int64_t>(i) * kRowThreads + threadIdx.x) * 8;
    if (col < cols) c[i].load(xr + col); else c[i].zero();
  }
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    float v[8];
    c[i].to_floats(v);
#pragma unroll
    for (int j = 0; j < 8; ++j) amax = fmaxf(amax, fabsf(v[j]));
  }
  const float s = fp8_scale_from_amax(block_max<kRowThreads>(amax), pow2), inv = fp8_inv_scale(s);
  if (threadIdx.x == 0) scales[r * s_row] = s;
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int64_t col = (static_cast<int64_t>(i) * kRowThreads + threadIdx.x) * 8;
    if (col < cols) {
      float v[8];
      c[i].to_floats(v);
      store8_fp8(q + r * ldq + col, v, inv);
    }
  }
}

// One block per row (per-token scales) for rows past 4096 chunks: pass 1 reduces the amax, pass 2
// quantizes (its loads hit L2, hence the default cache policy here).
template <class T>
__global__ void __launch_bounds__(kThreads) quantize_rows(const T* __restrict__ x, int64_t ldx, uint8_t* __restrict__ q,
                                                          int64_t ldq, int64_t cols, float* __restrict__ scales,
                                                          int64_t s_row, bool pow2) {
  const int64_t r = blockIdx.x;
  const T* xr = x + r * ldx;
  float amax = 0.0f;
  for (int64_t c = threadIdx.x * 8; c < cols; c += kThreads * 8) {
    float v[8];
    load8(xr + c, v);
#pragma unroll
    for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(v[i]));
  }
  amax = block_max<kThreads>(amax);
  const float s = fp8_scale_from_amax(amax, pow2), inv = fp8_inv_scale(s);
  if (threadIdx.x == 0) scales[r * s_row] = s;
  for (int64_t c = threadIdx.x * 8; c < cols; c += kThreads * 8) {
    float v[8];
    load8(xr + c, v);
    store8_fp8(q + r * ldq + c, v, inv);
  }
}

// 1x128 groups (cols > 128). A warp's tile is 8 rows x one group, in two halves of 4 rows; each
// 8-lane octet holds one row of a half: 2 of its 16 chunks per lane (lane l: columns g * 128 + l * 8
// and g * 128 + 64 + l * 8), so 4 chunks per lane per tile, and a group's reduction is 3 shuffle
// steps that serve 4 groups at once. Tiles run through the group index fastest, so the 8 warps of a
// block read 8 rows x 1 KiB; with M-major scales (s_row == 1) the 4 scales of a half are 16
// consecutive bytes, written by one instruction.
//
// One tile per warp and a grid that covers them all (up to kMaxGroupBlocks blocks; past that the
// warps stride over the rest): measured on the H200 against the one-wave pipelined version this
// kernel had before (bit-identical output), 15.6 against 17.0 us at 4096x4096 bf16 and 52.6
// against 55.6 us at 8192x8192, where a plain memcpy of the same bytes takes 14.9 and 49.1 us. The
// same test put this tile ahead of one block per row (16.8 us: each scale a lone 4-byte store
// in the M-major layout) and of 2-, 4- or 8-row warp tiles with other lane splits (16.0-18.3 us).
template <class T>
__global__ void __launch_bounds__(kThreads) quantize_groups_1x128(const T* __restrict__ x, int64_t ldx,
                                                                  uint8_t* __restrict__ q, int64_t ldq, int64_t rows,
                                                                  int64_t cols, float* __restrict__ scales,
                                                                  int64_t s_row, int64_t s_grp, bool pow2) {
  // groups fits in 32 bits: a row of 2^31 groups would take 512 GiB even in bf16.
  const int groups = static_cast<int>((cols + 127) / 128);
  const int64_t tiles = (rows + 7) / 8 * groups;
  const int octet = (threadIdx.x >> 3) & 3, l8 = threadIdx.x & 7;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * (kThreads / 32);
  for (int64_t tile = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32; tile < tiles;
       tile += stride) {
    const int64_t rb = tile / groups;
    const int g = static_cast<int>(tile - rb * groups);
    // Row of half h, column of chunk j.
    const auto row = [&](int h) { return rb * 8 + h * 4 + octet; };
    const auto col = [&](int j) { return static_cast<int64_t>(g) * 128 + j * 64 + l8 * 8; };
    Chunk8<T> c[2][2];
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int j = 0; j < 2; ++j) load_stream(c[h][j], x + row(h) * ldx + col(j), row(h) < rows && col(j) < cols);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // Every lane reaches the shuffles (rows and columns past the end hold zeros).
      const float sc = fp8_scale_from_amax(lanes_max<8>(chunks_amax<2>(c[h])), pow2), inv = fp8_inv_scale(sc);
      const int64_t r = row(h);
      if (r < rows) {
        if (l8 == 0) scales[r * s_row + g * s_grp] = sc;
#pragma unroll
        for (int j = 0; j < 2; ++j)
          if (col(j) < cols) quantize_chunk(c[h][j], q + r * ldq + col(j), inv);
      }
    }
  }
}
constexpr int64_t kMaxGroupBlocks = int64_t{1} << 20;

// Static scale: the matrix as rows x cols/8 chunks, thread t of T handles chunks t, t + T, t + 2T, ...
// (consecutive lanes, consecutive chunks), 4 at a time. Positions advance by T without a division.
// Column positions in 32 bits (the launcher splits rows past 2^33 columns): 64-bit ones spilled.
template <class T>
__global__ void __launch_bounds__(kThreads, kBlocks85<T>) quantize_static(const T* __restrict__ x, int64_t ldx,
                                                                           uint8_t* __restrict__ q, int64_t ldq,
                                                                           int64_t rows, int64_t cols,
                                                                           const float* __restrict__ scale,
                                                                           float scale_value, int32_t* error_flag) {
  set_zero_word();
  constexpr int kU = 4;
  struct Pos {
    int64_t r;  // row
    int c;      // chunk column
  };
  const int chunks = static_cast<int>(cols / 8);
  // The grid is one wave: T fits in 32 bits.
  const int step = static_cast<int>(gridDim.x) * kThreads, d_r = step / chunks, d_c = step % chunks;
  const int i = static_cast<int>(blockIdx.x) * kThreads + static_cast<int>(threadIdx.x);
  const auto advance = [&](Pos p) {
    p.c += d_c;
    p.r += d_r;
    if (p.c >= chunks) p.c -= chunks, ++p.r;
    return p;
  };
  const Pos first{i / chunks, i % chunks};
  // Read before the first loads, used after them: its latency hides behind theirs. A null pointer
  // means the host gave the scale by value (already validated there).
  const float s = scale != nullptr ? __ldg(scale) : scale_value;
  pipelined<Chunk8<T>[kU]>(
      first,
      [&](Pos p) {
#pragma unroll
        for (int u = 0; u < kU; ++u) p = advance(p);
        return p;
      },
      [&](const Pos& p) { return p.r < rows; },
      // Positions only grow, so p.r < rows also covers the item's own validity.
      [&](Chunk8<T>(&c)[kU], Pos p, bool) {
#pragma unroll
        for (int u = 0; u < kU; ++u, p = advance(p))
          load_stream(c[u], x + p.r * ldx + static_cast<int64_t>(p.c) * 8, p.r < rows);
      },
      [&](const Chunk8<T>(&c)[kU], Pos p) {
        // A scale that is not positive, normal and finite (its reciprocal is Inf, NaN or negative)
        // gives zeros, never NaN codes; the error flag below tells the caller (include/qsgemm/quant.h).
        const bool ok = fp8_scale_is_valid(s);
        const float inv = fp8_inv_scale(s);
#pragma unroll
        for (int u = 0; u < kU; ++u, p = advance(p)) {
          if (p.r < rows) {
            uint8_t* dst = q + p.r * ldq + static_cast<int64_t>(p.c) * 8;
            if (ok) quantize_chunk(c[u], dst, inv);
            else *reinterpret_cast<uint2*>(dst) = make_uint2(0u, 0u);
          }
        }
      });
  if (error_flag != nullptr && blockIdx.x == 0 && threadIdx.x == 0 && !fp8_scale_is_valid(s)) *error_flag = 1;
}

// One block per 128x128 tile: 16 column chunks x 16 row slices per pass, 8 passes. The chunks stay
// raw (half the registers of floats), so that more blocks fit on an SM.
template <class T>
__global__ void __launch_bounds__(kThreads, kBlocks64<T>) quantize_blocks(const T* __restrict__ x, int64_t ldx,
                                                                           uint8_t* __restrict__ q, int64_t ldq,
                                                                           int64_t rows, int64_t cols,
                                                                           float* __restrict__ scales) {
  const int64_t kb = (cols + 127) / 128;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * 128, c0 = static_cast<int64_t>(blockIdx.x) * 128;
  const int cc = threadIdx.x & 15, rr = threadIdx.x >> 4;  // chunk column, row within a pass
  const int64_t c = c0 + cc * 8;
  Chunk8<T> v[8];
#pragma unroll
  for (int p = 0; p < 8; ++p) {
    const int64_t r = r0 + p * 16 + rr;
    load_stream(v[p], x + r * ldx + c, r < rows && c < cols);
  }
  const float amax = block_max<kThreads>(chunks_amax<8>(v));
  const float s = fp8_scale_from_amax(amax, false), inv = fp8_inv_scale(s);
  if (threadIdx.x == 0) scales[blockIdx.y * kb + blockIdx.x] = s;
#pragma unroll
  for (int p = 0; p < 8; ++p) {
    const int64_t r = r0 + p * 16 + rr;
    if (r < rows && c < cols) quantize_chunk(v[p], q + r * ldq + c, inv);
  }
}

// SMs of the current device (cached by device_info): the one-wave grids are sized for it.
int sm_count() {
  const int n = device_info(-1).sm_count;
  return n > 0 ? n : 132;  // an error, if any, is reported by check_launch after the launch
}

// How many workers to launch for `items` equal items when `resident` workers fit on the GPU at once:
// at most one wave, and every worker gets the same number of items (or one less), so that none is
// left running alone at the end.
int64_t balanced_workers(int64_t items, int64_t resident) {
  const int64_t rounds = (items + resident - 1) / resident;
  return (items + rounds - 1) / rounds;
}

template <template <class> class Launch, class... A>
void dispatch(DType t, A... a) {
  switch (t) {
    case DType::kBF16: Launch<__nv_bfloat16>::run(a...); break;
    case DType::kF16: Launch<__half>::run(a...); break;
    case DType::kF32: Launch<float>::run(a...); break;
    default: break;  // validated by the caller
  }
}

template <class T>
struct LaunchGroups {
  template <int kLanes, int kChunks, int kSets>
  static void rows_warp(const T* x, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows, int64_t cols, float* scales,
                        int64_t s_row, bool pow2, int sms, cudaStream_t st) {
    constexpr int kRows = 32 / kLanes * kSets;
    const int64_t warps =
        balanced_workers((rows + kRows - 1) / kRows, int64_t{sms} * kBlocks64<T> * (kThreads / 32));
    const auto grid = static_cast<unsigned>((warps + kThreads / 32 - 1) / (kThreads / 32));
    quantize_rows_warp<T, kLanes, kChunks, kSets><<<grid, kThreads, 0, st>>>(x, ldx, q, ldq, rows, cols, scales,
                                                                             s_row, pow2);
  }

  static void run(const void* x, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows, int64_t cols, int64_t group,
                  float* scales, int64_t s_row, int64_t s_grp, bool pow2, cudaStream_t st) {
    const T* xp = static_cast<const T*>(x);
    const int sms = sm_count();
    if (group >= cols) {
      // Rows up to 32768 columns stay in registers (one read of memory); longer rows loop twice.
      // Short rows: several rows per warp, at least 4 chunks per lane.
      const int64_t chunks = cols / 8;
      if (chunks <= 8) rows_warp<8, 1, 4>(xp, ldx, q, ldq, rows, cols, scales, s_row, pow2, sms, st);
      else if (chunks <= 16) rows_warp<16, 1, 4>(xp, ldx, q, ldq, rows, cols, scales, s_row, pow2, sms, st);
      else if (chunks <= 32) rows_warp<32, 1, 4>(xp, ldx, q, ldq, rows, cols, scales, s_row, pow2, sms, st);
      else if (chunks <= 64) rows_warp<32, 2, 2>(xp, ldx, q, ldq, rows, cols, scales, s_row, pow2, sms, st);
      else if (chunks <= 128) rows_warp<32, 4, 1>(xp, ldx, q, ldq, rows, cols, scales, s_row, pow2, sms, st);
      // Longer rows: one row per block, the whole row in registers (measured on the H200: 87% of
      // copy bandwidth at 8192x8192 bf16, ahead of the pipelined multi-row kernels there).
      else if (chunks <= 128 * 2) quantize_rows_resident<T, 128, 2><<<static_cast<unsigned>(rows), 128, 0, st>>>(xp, ldx, q, ldq, cols, scales, s_row, pow2);
      else if (chunks <= 128 * 4) quantize_rows_resident<T, 128, 4><<<static_cast<unsigned>(rows), 128, 0, st>>>(xp, ldx, q, ldq, cols, scales, s_row, pow2);
      else if (chunks <= 128 * 8) quantize_rows_resident<T, 128, 8><<<static_cast<unsigned>(rows), 128, 0, st>>>(xp, ldx, q, ldq, cols, scales, s_row, pow2);
      else if (chunks <= 256 * 8) quantize_rows_resident<T, 256, 8><<<static_cast<unsigned>(rows), 256, 0, st>>>(xp, ldx, q, ldq, cols, scales, s_row, pow2);
      else if (chunks <= 256 * 16) quantize_rows_resident<T, 256, 16><<<static_cast<unsigned>(rows), 256, 0, st>>>(xp, ldx, q, ldq, cols, scales, s_row, pow2);
      else {
        // Past 32768 columns: two passes.
        quantize_rows<T><<<static_cast<unsigned>(rows), kThreads, 0, st>>>(xp, ldx, q, ldq, cols, scales, s_row, pow2);
      }
    } else {
      const int64_t tiles = (rows + 7) / 8 * ((cols + 127) / 128);
      const auto grid = static_cast<unsigned>(std::min(kMaxGroupBlocks, (tiles + kThreads / 32 - 1) / (kThreads / 32)));
      quantize_groups_1x128<T><<<grid, kThreads, 0, st>>>(xp, ldx, q, ldq, rows, cols, scales, s_row, s_grp, pow2);
    }
  }
};
template <class T>
struct LaunchStatic {
  static void run(const void* x, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows, int64_t cols, const float* s,
                  float s_value, int32_t* error_flag, cudaStream_t st) {
    // quantize_static keeps chunk columns in 32 bits: rows past 2^33 columns go in slabs.
    constexpr int64_t kMaxCols = int64_t{1} << 33;
    const int64_t per_block = int64_t{kThreads} * 4;  // its kU chunks per thread
    const int sms = sm_count();
    for (int64_t c0 = 0; c0 < cols; c0 += kMaxCols) {
      const int64_t w = std::min(kMaxCols, cols - c0);
      const int64_t blocks =
          balanced_workers((rows * (w / 8) + per_block - 1) / per_block, int64_t{sms} * kBlocks85<T>);
      quantize_static<T><<<static_cast<unsigned>(blocks), kThreads, 0, st>>>(static_cast<const T*>(x) + c0, ldx, q + c0,
                                                                             ldq, rows, w, s, s_value,
                                                                             error_flag);
    }
  }
};
template <class T>
struct LaunchBlocks {
  static void run(const void* x, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows, int64_t cols, float* s,
                  cudaStream_t st) {
    const dim3 grid(static_cast<unsigned>((cols + 127) / 128), static_cast<unsigned>((rows + 127) / 128));
    quantize_blocks<T><<<grid, kThreads, 0, st>>>(static_cast<const T*>(x), ldx, q, ldq, rows, cols, s);
  }
};

}  // namespace

void launch_quantize_fp8_groups(const void* x, DType xt, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows,
                                int64_t cols, int64_t group, float* scales, int64_t s_row, int64_t s_grp, bool pow2,
                                cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  dispatch<LaunchGroups>(xt, x, ldx, q, ldq, rows, cols, group, scales, s_row, s_grp, pow2, stream);
  detail::check_launch("quantize_fp8", "quantize kernel launch");
}

void launch_quantize_fp8_static(const void* x, DType xt, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows,
                                int64_t cols, const float* scale, float scale_value, int32_t* error_flag,
                                cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  dispatch<LaunchStatic>(xt, x, ldx, q, ldq, rows, cols, scale, scale_value, error_flag, stream);
  detail::check_launch("quantize_fp8_static", "quantize kernel launch");
}

void launch_quantize_fp8_blocks(const void* x, DType xt, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows,
                                int64_t cols, float* scales, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  dispatch<LaunchBlocks>(xt, x, ldx, q, ldq, rows, cols, scales, stream);
  detail::check_launch("quantize_fp8_weight", "quantize kernel launch");
}

}  // namespace qsgemm::kernels
