// int32 -> float for |v| < 2^22 without I2F. I2F runs at a quarter of the FP32 rate on sm_90
// (16 per clock per SM), and the W4A4 kernels convert every accumulator's group sum once per group:
// that conversion, not the tensor cores, bounded them. Adding v to the bit pattern of 1.5·2^23 puts
// it into the mantissa (the exponent stays: 2^22 + v lies in [0, 2^23)), so the float is 1.5·2^23 + v
// exactly, and one exact FADD removes the offset: an integer add and a float add, both full rate.
#pragma once

#include <cstdint>

namespace qsgemm::kernels {

inline constexpr int32_t kSmallIntToFloatLimit = 1 << 22;  // |v| < this
inline constexpr int32_t kSmallIntFloatBits = 0x4B400000;  // the bit pattern of 1.5·2^23 = 12582912.0f

__device__ __forceinline__ float small_int_to_float(int32_t v) {
  return __int_as_float(v + kSmallIntFloatBits) - 12582912.0f;
}

}  // namespace qsgemm::kernels
