// NEON kernel table (AArch64 with the dot-product extension): the portable definition compiled
// for ARMv8.2-A+dotprod, so the integer block dots vectorize to NEON (widening multiply-accumulate,
// SDOT where the compiler finds it) while the float order stays the source's: the bits equal the
// scalar table's. K-quants use SDOT intrinsics over the K repack (kqpack_neon.h) and, for the
// columns past its 16-column groups, on GGUF rows (kquant_neon.h); hand-written intrinsics for the
// other hot types are the next step on ARM.
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
}  // namespace neon_impl
}  // namespace eyas::cpu::quant
#pragma GCC pop_options

namespace eyas::cpu::quant {
const Table* table_neon() {
  static const Table tb = [] {
    Table t{};
    t.isa = Isa::Neon;
    neon_impl::fill_generic(t);
    t.cols[kQ4_K] = &neon_impl::cols_kq_packed_neon<kQ4_K>;
    t.cols[kQ5_K] = &neon_impl::cols_kq_packed_neon<kQ5_K>;
    t.cols[kQ6_K] = &neon_impl::cols_kq_packed_neon<kQ6_K>;
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
