// Scalar (baseline-ISA) kernel table: the portable reference every SIMD path must match.
#include "cpu/quant/kernels.h"
#include "cpu/quant/scratch.h"

namespace eyas::cpu::quant {
namespace scalar_impl {
static inline float H2F(uint16_t h) { return h2f(h); }
#include "cpu/quant/dot_generic.h"
}  // namespace scalar_impl

const Table& table_scalar() {
  static const Table tb = [] {
    Table t{};
    t.isa = Isa::Scalar;
    scalar_impl::fill_generic(t);
    return t;
  }();
  return tb;
}

bool is_k_quant(WKind k) { return k == kQ4_K || k == kQ5_K || k == kQ6_K; }

int block_elems(WKind k) {
  if (k == kF32 || k == kF16 || k == kBF16) return 1;
  return is_k_quant(k) ? 256 : 32;
}

}  // namespace eyas::cpu::quant
