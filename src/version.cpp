#include "qsgemm/version.h"

namespace qsgemm {

const char* version() noexcept { return QSGEMM_VERSION; }

}  // namespace qsgemm
