// qsgemm/error.h — the one error type of the library.
//
// Every public entry point validates its operands before it touches the GPU and throws
// qsgemm::Error on bad input. The message names the operand and the offending values, e.g.
//   "qsgemm::sparse24_linear: K=4100 must be a multiple of 32 (operand X)".
// CUDA failures (a failed launch, an illegal address reported by an earlier launch) surface as
// Error with code Status::kCudaError and the CUDA error string. Nothing in the library calls
// exit() or abort() on bad input.
#pragma once

#include <stdexcept>
#include <string>

namespace qsgemm {

enum class Status : int {
  kSuccess = 0,
  kInvalidArgument = 1,  // a shape, leading dimension, dtype or option that the operation rejects
  kMisaligned = 2,       // a pointer or leading dimension that breaks an alignment rule
  kInvalidValue = 3,     // data that breaks a format rule: NaN/Inf in a weight, a group that is not 2:4
  kUnsupported = 4,      // valid input that this build or device cannot run (e.g. no sm_90a GPU)
  kCudaError = 5,        // a CUDA runtime call or kernel launch failed
  kInternal = 6,         // a bug in qsgemm: please report it
};

// Short name of a status, e.g. "invalid_argument".
const char* status_name(Status s) noexcept;

class Error : public std::runtime_error {
 public:
  Error(Status code, std::string operand, const std::string& message)
      : std::runtime_error(message), code_(code), operand_(std::move(operand)) {}

  Status code() const noexcept { return code_; }
  // The operand the error is about ("K", "X", "w_scale", ...); empty when it concerns no operand.
  const std::string& operand() const noexcept { return operand_; }

 private:
  Status code_;
  std::string operand_;
};

}  // namespace qsgemm
