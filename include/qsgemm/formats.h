// qsgemm/formats.h — host-side codecs and layout arithmetic for every byte format qsgemm reads or
// writes. docs/formats.md is the prose for each function here; section numbers (§) point there.
// All functions are pure host code (no GPU needed) and are what the CPU reference and the tests use.
#pragma once

#include <cfloat>
#include <cstdint>

namespace qsgemm {

// ---- §1 FP8 e4m3 (OCP "fn") -------------------------------------------------------------------
inline constexpr float kE4M3Max = 448.0f;

// float -> e4m3, round-to-nearest-even, saturating to ±448, NaN -> 0x7F, ±Inf -> ±448.
// Bit-identical to CUDA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3) and to the sm_90
// instruction cvt.rn.satfinite.e4m3x2.f32 (tests/cpu/test_fp8.cpp checks every float class).
uint8_t fp8_e4m3_encode(float x);
// e4m3 -> float (exact). 0x7F / 0xFF decode to NaN.
float fp8_e4m3_decode(uint8_t v);

// ---- 16-bit floats (host conversions, RNE) ------------------------------------------------------
uint16_t bf16_encode(float x);
float bf16_decode(uint16_t v);
uint16_t fp16_encode(float x);
float fp16_decode(uint16_t v);

// ---- §2 scales ----------------------------------------------------------------------------------
// Dynamic FP8 scale of a group whose largest magnitude is `amax`: amax / 448, or 1 when amax == 0
// (an all-zero group quantizes to zeros). With pow2, the scale is rounded up to a power of two
// (2^ceil(log2(amax/448))), as DeepSeek-V3 and vLLM's "ue8m0" scales do; values then still fit.
// The scale is never below FLT_MIN (the smallest normal float, 2^-126): a group with a tiny but
// non-zero amax (< 448 * FLT_MIN, about 5.3e-36) gets s = FLT_MIN, so that 1/s = 2^126 is finite
// (a subnormal s has an infinite reciprocal, and 0 * Inf is NaN). Its elements then map to
// |x| * 2^126 <= 448 (docs/formats.md §2, "Tiny groups"). The GPU quantizers do the same.
float fp8_scale_from_amax(float amax, bool pow2 = false);
// What every scale qsgemm divides by must be: positive, normal and finite (FLT_MIN <= s <= FLT_MAX).
// 0, negative, subnormal, NaN and Inf are not (their reciprocal is Inf, NaN or negative). Scales a
// caller gives (quantize_fp8_static, Sparse24Scale::kGiven) are checked with this.
inline bool fp8_scale_is_valid(float s) { return s >= FLT_MIN && s <= FLT_MAX; }
// The quantizers multiply by the reciprocal of the scale, computed once per group in IEEE float
// (correctly rounded, so the GPU's __frcp_rn gives the same bits), as vLLM and DeepGEMM do:
//   q = fp8_e4m3_encode(x * (1 / s))            (docs/formats.md §2)
inline float fp8_inv_scale(float s) { return 1.0f / s; }
inline uint8_t fp8_quantize_inv(float x, float inv_s) { return fp8_e4m3_encode(x * inv_s); }
inline uint8_t fp8_quantize(float x, float s) { return fp8_quantize_inv(x, fp8_inv_scale(s)); }

// Groups of 128 along K (1x128 activations, 128x128 weight blocks, per-channel groups).
inline constexpr int kScaleGroupK = 128;
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---- §4 2:4 sparse FP8 weights ----------------------------------------------------------------
// A weight W[N,K] (row-major, 2:4 along K) is stored as
//   values   e4m3 [N, K/2] row-major (dense, ld = K/2), the two kept values of each group of 4 in
//            ascending k order;
//   metadata bytes, sparse24_meta_bytes(N, K) of them, in the layout the sm90 sparse wgmma reads:
//            4 bits per group of 4 (two 2-bit indices, the lower index in bits 0-1), and
//            the nibble of (row n, group g = k/4) at sparse24_meta_offset(); rows are padded to
//            a multiple of 64 and K to a multiple of 128 (padding nibbles hold 0x4 = indices {0,1}).
inline constexpr int kSparse24MetaRowAlign = 64;   // §4.3: one metadata atom is 64 rows
inline constexpr int kSparse24MetaKAlign = 128;    // §4.3: ... by 128 logical k (16 bytes)
inline constexpr uint8_t kSparse24PadNibble = 0x4;  // indices {0,1}

inline int64_t sparse24_meta_rows(int64_t N) { return ceil_div(N, kSparse24MetaRowAlign) * kSparse24MetaRowAlign; }
inline int64_t sparse24_meta_kpad(int64_t K) { return ceil_div(K, kSparse24MetaKAlign) * kSparse24MetaKAlign; }
inline int64_t sparse24_meta_bytes(int64_t N, int64_t K) { return sparse24_meta_rows(N) * sparse24_meta_kpad(K) / 8; }
// Byte offset of the metadata of (row n, logical column k); the group's nibble is the low one when
// (k / 4) is even. Blocks of 128 k are stored one after another, each a row-major
// [rows_padded][16 bytes] panel.
inline int64_t sparse24_meta_offset(int64_t N, int64_t n, int64_t k) {
  return ((k / kSparse24MetaKAlign) * sparse24_meta_rows(N) + n) * (kSparse24MetaKAlign / 8) +
         (k % kSparse24MetaKAlign) / 8;
}
inline int sparse24_meta_shift(int64_t k) { return ((k / 4) % 2) * 4; }

// 2:4 selection for one group of 4 along K: the two entries with the largest magnitude, ties broken
// towards the lower index; -0.0 and +0.0 are both magnitude zero. Returns the two kept indices
// (i0 < i1) encoded as a nibble i0 | (i1 << 2). NaN is not accepted (callers reject it first).
uint8_t sparse24_select(const float g[4]);
// Number of entries of the group that are not zero (-0.0 counts as zero).
int sparse24_nonzeros(const float g[4]);

// ---- §5 signed INT4 ---------------------------------------------------------------------------
// Two signed 4-bit values per byte (two's complement, -8..7); the even k in the low nibble.
inline uint8_t int4_pack(int lo, int hi) { return static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4)); }
inline int int4_unpack(uint8_t b, int which) {
  int v = (which ? (b >> 4) : b) & 0xF;
  return v >= 8 ? v - 16 : v;
}
// Symmetric INT4 scale of a group: amax / 7 (1 when amax == 0, at least FLT_MIN like the FP8 scale);
// q = clamp(rint(x / s), -8, 7).
float int4_scale_from_amax(float amax);
int int4_quantize(float x, float s);

}  // namespace qsgemm
