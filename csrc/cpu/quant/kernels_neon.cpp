// NEON kernel table (AArch64 with the dot-product extension): the portable definition compiled
// for ARMv8.2-A+dotprod, so the integer block dots vectorize to NEON (widening multiply-accumulate,
// SDOT where the compiler finds it) while the float order stays the source's: the bits equal the
// scalar table's. The quantized types use SDOT-by-lane intrinsics over the repacks (q4pack_neon.h:
// Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0; kqpack_neon.h: the K-quants); the columns past their 16-column
// groups take the GGUF rows (K-quants: SDOT sub-block dots, kquant_neon.h; the others: the portable
// loops).
// Verified on x86 hosts by cross-compiling and running under qemu (tests/test_neon_cross.py).
#include "cpu/quant/kernels.h"
#include "cpu/quant/kquant_sums.h"
#include "cpu/quant/q4pack.h"
#include "cpu/quant/scratch.h"

#if defined(__aarch64__) && defined(__GNUC__)
#include <arm_neon.h>

#include <cstring>

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")
namespace eyas::cpu::quant {
namespace neon_impl {
static inline float H2F(uint16_t h) {  // hardware half -> float: exact, as h2f
  __fp16 f;
  std::memcpy(&f, &h, sizeof f);
  return float(f);
}
#include "cpu/quant/dot_generic.h"
#include "cpu/quant/kquant_neon.h"
#include "cpu/quant/kqpack_neon.h"
#include "cpu/quant/q4rows.h"
#include "cpu/quant/q4pack_neon.h"
}  // namespace neon_impl
}  // namespace eyas::cpu::quant
#pragma GCC pop_options

namespace eyas::cpu::quant {
const Table* table_neon() {
  static const Table tb = [] {
    Table t{};
    t.isa = Isa::Neon;
    using namespace neon_impl;
    fill_generic(t);
    t.cols[kQ8_0] = &cols_neon_packed<kQ8_0, &cols_generic<dot_q8_0, 32>>;
    t.cols[kQ4_0] = &cols_neon_packed<kQ4_0, &cols_generic<dot_q4_0, 32>>;
    t.cols[kQ4_1] = &cols_neon_packed<kQ4_1, &cols_generic<dot_q4_1, 32>>;
    t.cols[kQ5_0] = &cols_neon_packed<kQ5_0, &cols_generic<dot_q5_0, 32>>;
    t.cols[kQ5_1] = &cols_neon_packed<kQ5_1, &cols_generic<dot_q5_1, 32>>;
    t.q4pack_min_rows = 1;  // the repacks at every T, as on AVX2
    t.q5pack = true;
    t.q8pack_max_rows = INT64_MAX;
    t.cols[kQ4_K] = &cols_kq_packed_neon<kQ4_K>;
    t.cols[kQ5_K] = &cols_kq_packed_neon<kQ5_K>;
    t.cols[kQ6_K] = &cols_kq_packed_neon<kQ6_K>;
    t.kpack = true;
    return t;
  }();
  return &tb;
}
}  // namespace eyas::cpu::quant
#else
namespace eyas::cpu::quant {
const Table* table_neon() { return nullptr; }
}  // namespace eyas::cpu::quant
#endif
