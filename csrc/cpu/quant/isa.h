// Run-time choice of the matmul instruction set: the best the CPU supports, overridable for
// tests (set_isa) or by the EYAS_ISA environment variable ("scalar", "avx2", "avx512", "amx", "neon").
#pragma once
#include <string>
#include <vector>

#include "cpu/quant/kernels.h"

namespace eyas::cpu::quant {

const char* isa_name(Isa isa);
std::vector<std::string> available_isas();  // in increasing order of preference
// Throws std::invalid_argument("[set_isa] ...") for an unknown or unsupported name.
void set_isa(const std::string& name);
Isa current_isa();
const Table& current_table();
// AMX tile data needs a per-process permission from Linux; true once granted.
bool amx_usable();
// The x86 K-quant kernels' GFNI byte maps (kqpack_avx512.h): used where the CPU has GFNI unless a test
// turned them off (allow_gfni(false)), to prove both unpacks give the same bits.
bool gfni_usable();
void allow_gfni(bool on);

}  // namespace eyas::cpu::quant
