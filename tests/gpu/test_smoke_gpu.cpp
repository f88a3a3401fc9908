#include <gtest/gtest.h>
#include "qsgemm/device.h"
TEST(SmokeGpu, Device) { if (!qsgemm::device_info().supports_kernels()) GTEST_SKIP() << "no sm_90 GPU"; SUCCEED(); }
