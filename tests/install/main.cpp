// Uses the installed headers and library: the fp8 codec, the version and one validation error.
#include <qsgemm/error.h>
#include <qsgemm/formats.h>
#include <qsgemm/qsgemm.h>

#include <cstdio>
#include <cstring>

int main() {
  if (qsgemm::fp8_e4m3_encode(1.0f) != 0x38) return 1;
  if (std::strcmp(qsgemm::version(), QSGEMM_VERSION) != 0) return 4;  // the installed, generated header
  try {
    qsgemm::sparse24_weight_bytes(100, 4100);
  } catch (const qsgemm::Error& e) {
    std::printf("consumer: %s\n", e.what());
    return e.code() == qsgemm::Status::kInvalidArgument ? 0 : 2;
  }
  return 3;
}
