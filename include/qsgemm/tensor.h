// qsgemm/tensor.h — non-owning views of device (or host) memory.
//
// qsgemm never allocates or frees the caller's tensors. A view is a pointer plus dtype, shape and
// leading dimension; it is cheap to copy and carries no ownership. All matrices are row-major:
// element (r, c) lives at data + (r * ld + c) * element_size. Leading dimensions are counted in
// elements, not bytes. Which operands are read and which are written is stated by each function.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qsgemm {

enum class DType : uint8_t {
  kF32,    // IEEE binary32
  kF16,    // IEEE binary16
  kBF16,   // bfloat16
  kE4M3,   // FP8 e4m3 "fn" (OCP): finite only, max 448, see docs/formats.md §1
  kU8,     // raw bytes (sparse metadata)
  kI4x2,   // two signed 4-bit values per byte, see docs/formats.md §5; shapes count bytes
  kI8,     // signed 8-bit integer (two's complement); no entry point takes it today
};

// Bytes per element of a dtype (kI4x2: one byte holds two values).
inline constexpr int dtype_size(DType t) {
  return t == DType::kF32 ? 4 : (t == DType::kF16 || t == DType::kBF16) ? 2 : 1;
}

const char* dtype_name(DType t) noexcept;

// A row-major matrix [rows, cols] with leading dimension ld >= cols (elements).
struct MatrixView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;

  MatrixView() = default;
  MatrixView(void* d, DType t, int64_t r, int64_t c, int64_t leading = -1)
      : data(d), dtype(t), rows(r), cols(c), ld(leading < 0 ? c : leading) {}
  MatrixView(const void* d, DType t, int64_t r, int64_t c, int64_t leading = -1)
      : MatrixView(const_cast<void*>(d), t, r, c, leading) {}
  MatrixView(std::nullptr_t, DType t, int64_t r, int64_t c, int64_t leading = -1)
      : MatrixView(static_cast<void*>(nullptr), t, r, c, leading) {}
};

// A contiguous vector of `size` elements (per-token scales, per-channel scales, bias).
struct VectorView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t size = 0;

  VectorView() = default;
  VectorView(void* d, DType t, int64_t n) : data(d), dtype(t), size(n) {}
  VectorView(const void* d, DType t, int64_t n) : VectorView(const_cast<void*>(d), t, n) {}
  VectorView(std::nullptr_t, DType t, int64_t n) : VectorView(static_cast<void*>(nullptr), t, n) {}
  // No elements: an optional vector (a bias) that is absent. A null pointer with size > 0 is not
  // empty: it is an error where a vector is read.
  bool empty() const { return size == 0; }
};

}  // namespace qsgemm
