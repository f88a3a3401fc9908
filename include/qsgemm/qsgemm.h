// qsgemm/qsgemm.h — the whole public API in one include. (The float64 CPU reference of every format
// and GEMM is not part of it: include "qsgemm/reference.h" where you need it.)
#pragma once

#include "qsgemm/blockwise.h"  // FP8 GEMM with 1x128 / 128x128 / per-row scales
#include "qsgemm/device.h"     // device and build information
#include "qsgemm/error.h"      // qsgemm::Error, Status
#include "qsgemm/formats.h"    // host codecs and layout arithmetic (docs/formats.md)
#include "qsgemm/linear.h"     // LinearOptions, LinearPlan: the contract every family follows
#include "qsgemm/quant.h"      // GPU FP8 quantizers, ScaleView
#include "qsgemm/sparse24.h"   // 2:4 sparse FP8: compress, decompress, linear
#include "qsgemm/tensor.h"     // MatrixView, VectorView, DType
#include "qsgemm/version.h"    // QSGEMM_VERSION, qsgemm::version()
#include "qsgemm/w4a4.h"       // W4A4 + low-rank: packer, quantizer, fused GEMM
