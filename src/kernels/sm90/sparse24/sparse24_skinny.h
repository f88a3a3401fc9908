// The decode-sized ("skinny") 2:4 sparse FP8 kernel: not CUTLASS, so it lives outside the CUTLASS
// tables of sm90_sparse24_configs.h (and this header outside the CUTLASS translation units, which a
// change here does not rebuild). See sm90_sparse24_skinny.cu for the design.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/sm90/sparse24/sparse24_launch.h"

namespace qsgemm::kernels {

// Its configuration index follows the CUTLASS tables (sm90_sparse24_configs.h).
inline constexpr int kSparse24SkinnyConfig = 12;
// The largest token count it serves (four n8 token tiles).
inline constexpr int kSparse24SkinnyMaxM = 32;

// How the kernel covers a problem: T token tiles of 8 (M <= 8T); CTAs of KW warps, each a K split
// over 128-wide panels of K, on 16·MT weight rows; row_ctas CTAs along N; clusters of C CTAs along K
// (reduced through distributed shared memory, no workspace).
struct Sparse24SkinnyShape {
  int T = 1, MT = 1, KW = 1, row_ctas = 1, C = 1;
};
// Pure: how the kernel covers a problem on a GPU with sm_count SMs (<= 0: 132).
Sparse24SkinnyShape sparse24_skinny_shape(int64_t m_tok, int64_t n_out, int64_t k, int sm_count);

// Runs the skinny kernel on a (a.m_tok <= kSparse24SkinnyMaxM; a.workspace is not used). Throws
// qsgemm::Error when the launch fails.
void run_sparse24_skinny(const Sparse24GemmArgs& a, cudaStream_t stream);

}  // namespace qsgemm::kernels
