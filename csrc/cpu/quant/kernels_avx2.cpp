// AVX2 kernel table: the portable definition compiled for AVX2 (integer block dots vectorize;
// float order is the source's, so the bits equal the scalar table's), hand-written K-quant columns.
#include "cpu/quant/kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cstring>

#include "cpu/quant/kquant_sums.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi2")
namespace eyas::cpu::quant {
namespace avx2_impl {
static inline float H2F(uint16_t h) { return _cvtsh_ss(h); }  // F16C: exact, as h2f
#include "cpu/quant/dot_generic.h"
#include "cpu/quant/kquant_avx2.h"
}  // namespace avx2_impl
}  // namespace eyas::cpu::quant
#pragma GCC pop_options

namespace eyas::cpu::quant {
const Table* table_avx2() {
  static const Table tb = [] {
    Table t{};
    t.isa = Isa::Avx2;
    avx2_impl::fill_generic(t);
    t.cols[kQ4_K] = &avx2_impl::cols_kquant_v<kQ4_K>;
    t.cols[kQ5_K] = &avx2_impl::cols_kquant_v<kQ5_K>;
    t.cols[kQ6_K] = &avx2_impl::cols_kquant_v<kQ6_K>;
    return t;
  }();
  return &tb;
}
}  // namespace eyas::cpu::quant
#else
namespace eyas::cpu::quant {
const Table* table_avx2() { return nullptr; }
}  // namespace eyas::cpu::quant
#endif
