#include <gtest/gtest.h>
#include "qsgemm/formats.h"
TEST(Smoke, Fp8One) { EXPECT_EQ(qsgemm::fp8_e4m3_encode(1.0f), 0x38); }
