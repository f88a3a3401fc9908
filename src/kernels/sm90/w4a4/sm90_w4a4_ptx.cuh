// The PTX wrappers and small device helpers the W4A4 kernels share (the mma.sync GEMM, the decode
// GEMM, the wgmma GEMM's scale copies, the quantizer): one definition each.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace qsgemm::kernels::w4a4_ptx {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Nibbles -> s8 bytes holding 16·v: lo = (w << 4) & 0xF0F0F0F0 (even nibbles), hi = w & 0xF0F0F0F0
// (odd nibbles); each byte is 16·v exactly, v the signed nibble (two instructions per eight values,
// no sign extension). Products are 256·x·w; the kernels put the 2^-8 into a scale.
__device__ __forceinline__ uint32_t even_nibbles(uint32_t w) { return (w << 4) & 0xF0F0F0F0u; }
__device__ __forceinline__ uint32_t odd_nibbles(uint32_t w) { return w & 0xF0F0F0F0u; }

__device__ __forceinline__ void mma_s8(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                       uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
// The same with every C element c0: the first MMA of a group starts its integer sums at c0 (no
// instructions to set or zero them).
__device__ __forceinline__ void mma_s8_set_c(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                             uint32_t b0, uint32_t b1, int32_t c0) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};\n"
      : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(c0));
}
__device__ __forceinline__ void mma_s8_zero_c(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                              uint32_t b0, uint32_t b1) {
  mma_s8_set_c(c, a0, a1, a2, a3, b0, b1, 0);
}
__device__ __forceinline__ void mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Eight INT4 values (value i in bits 4i..4i+3, two's complement) -> eight e4m3 bytes (value i in byte
// i % 4 of out0 / out1), by the lookup of CUTLASS's NumericArrayConverter<e4m3, int4b_t>: each nibble
// indexes a positive and a negative 8-entry table with prmt and its sign bit picks one of the two.
// pos_lo / neg_lo: the table words kE4m3LutPosLo / kE4m3LutNegLo, passed in by the caller so that it
// decides where they live; the other two table words are immediates.
inline constexpr uint32_t kE4m3LutPosLo = 0x44403800u;  // e4m3 of [0, 1, 2, 3]
inline constexpr uint32_t kE4m3LutNegLo = 0xCACCCED0u;  // e4m3 of [-8, -7, -6, -5]
__device__ __forceinline__ void int4x8_to_e4m3(uint32_t pos_lo, uint32_t neg_lo, uint32_t w, uint32_t& out0,
                                               uint32_t& out1) {
  const uint32_t idx = w & 0x77777777u;
  const uint32_t sign = (w & 0x88888888u) >> 1;
  asm("{\n"
      "  .reg .b32 pos, neg, idx_hi;\n"
      "  prmt.b32 pos, %2, 0x4E4C4A48, %4;\n"
      "  prmt.b32 neg, %3, 0xB8C0C4C8, %4;\n"
      "  prmt.b32 %0, pos, neg, %5;\n"
      "  shr.b32 idx_hi, %4, 16;\n"
      "  prmt.b32 pos, %2, 0x4E4C4A48, idx_hi;\n"
      "  prmt.b32 neg, %3, 0xB8C0C4C8, idx_hi;\n"
      "  prmt.b32 %1, pos, neg, %6;\n"
      "}\n"
      : "=r"(out0), "=r"(out1)
      : "r"(pos_lo), "r"(neg_lo), "r"(idx), "r"(0x32103210u | sign), "r"(0x32103210u | (sign >> 16)));
}

// wgmma shared-memory descriptors for K-major operands with the 128-byte swizzle (rows of 128 bytes,
// 8-row atoms 1024 bytes apart), built by hand: CuTe's partition recomputes them per instruction.
// The low word: start address / 16 in bits 0-13, leading byte offset 1 (unused with a swizzle); an
// offset of a few KB is added to it as offset / 16 (shared addresses stay below 2^18: no carry out of
// the 14-bit field). The high word: stride byte offset 1024 / 16, layout "128-byte swizzle" (1 << 62).
__device__ __forceinline__ uint32_t sw128_desc_lo(uint32_t smem_addr) { return ((smem_addr & 0x3FFFFu) >> 4) | (1u << 16); }
__device__ __forceinline__ uint64_t sw128_desc(uint32_t lo) {
  uint64_t d;
  asm("mov.b64 %0, {%1, %2};" : "=l"(d) : "r"(lo), "r"(0x40000040u));
  return d;
}

template <class T>
__device__ __forceinline__ float to_f32(T v);
template <>
__device__ __forceinline__ float to_f32<float>(float v) { return v; }
template <>
__device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <>
__device__ __forceinline__ float to_f32<__half>(__half v) { return __half2float(v); }

__device__ __forceinline__ void store2(float* p, float a, float b) { *reinterpret_cast<float2*>(p) = make_float2(a, b); }
__device__ __forceinline__ void store2(__nv_bfloat16* p, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}
__device__ __forceinline__ void store2(__half* p, float a, float b) {
  *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b);
}

__device__ __forceinline__ void store1(float* p, float v) { *p = v; }
__device__ __forceinline__ void store1(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ void store1(__half* p, float v) { *p = __float2half_rn(v); }

}  // namespace qsgemm::kernels::w4a4_ptx
