// Shared by the CPU validation tests: fake addresses and the error-assertion helper.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "qsgemm/error.h"

namespace qsgemm::test {

// Fake, well-aligned addresses: validation never dereferences them.
inline void* addr(uintptr_t a) { return reinterpret_cast<void*>(a); }
inline const float* faddr(uintptr_t a) { return reinterpret_cast<const float*>(a); }

// f() must throw qsgemm::Error with `code`, a message containing `needle` and, when given, `operand`.
inline void expect_error(const std::function<void()>& f, Status code, const std::string& needle,
                         const std::string& operand = "") {
  try {
    f();
    ADD_FAILURE() << "no error thrown; expected " << status_name(code) << " mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
    if (!operand.empty()) EXPECT_EQ(e.operand(), operand) << e.what();
  }
}

}  // namespace qsgemm::test
