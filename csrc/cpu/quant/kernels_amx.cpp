// AMX table placeholder: AMX tiles are used only where they pay (large T); until then the
// AVX-512 table serves.
#include "cpu/quant/kernels.h"

namespace eyas::cpu::quant {
const Table* table_amx() { return nullptr; }
}  // namespace eyas::cpu::quant
