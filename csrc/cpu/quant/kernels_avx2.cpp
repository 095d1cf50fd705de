// AVX2 kernel table: the portable definition compiled for AVX2 (float order is the source's, so the
// bits equal the scalar table's), with hand-written columns over the repacks (Q4_0 / Q4_1 / Q5_0 /
// Q5_1 / Q8_0 and the K-quants), K-quant columns on GGUF rows, and activation quantization.
#include "cpu/quant/kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "cpu/quant/kquant_sums.h"
#include "cpu/softmax_exp.h"
#include "cpu/quant/q4pack.h"
#include "cpu/quant/scratch.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi2")
namespace eyas::cpu::quant {
namespace avx2_impl {
static inline float H2F(uint16_t h) { return _cvtsh_ss(h); }  // F16C: exact, as h2f
#include "cpu/quant/dot_generic.h"
#include "cpu/quant/float_tiles_avx2.h"
#include "cpu/quant/kquant_avx2.h"
#include "cpu/quant/q4rows.h"
#include "cpu/quant/q4pack_avx2.h"
#include "cpu/quant/kqpack_avx2.h"
}  // namespace avx2_impl
}  // namespace eyas::cpu::quant
#pragma GCC pop_options

namespace eyas::cpu::quant {
const Table* table_avx2() {
  static const Table tb = [] {
    Table t{};
    t.isa = Isa::Avx2;
    using namespace avx2_impl;
    fill_generic(t);
    t.quant32 = &quant_rows32_avx2;
    t.quant256 = &quant_rows256_avx2;
    t.cols[kF32] = &cols_float_tiles_avx2<kF32>;
    t.cols[kF16] = &cols_float_tiles_avx2<kF16>;
    t.cols[kBF16] = &cols_float_tiles_avx2<kBF16>;
    t.cols[kQ8_0] = &cols_avx2_packed<kQ8_0, &cols_generic<dot_q8_0, 32>>;
    t.cols[kQ4_0] = &cols_avx2_packed<kQ4_0, &cols_generic<dot_q4_0, 32>>;
    t.cols[kQ4_1] = &cols_avx2_packed<kQ4_1, &cols_generic<dot_q4_1, 32>>;
    t.q4pack_min_rows = 1;  // the repack at every T: GGUF rows would need a horizontal sum per block
    t.cols[kQ5_0] = &cols_avx2_packed<kQ5_0, &cols_generic<dot_q5_0, 32>>;
    t.cols[kQ5_1] = &cols_avx2_packed<kQ5_1, &cols_generic<dot_q5_1, 32>>;
    t.q5pack = true;
    t.q8pack_max_rows = INT64_MAX;
    t.cols[kQ4_K] = &cols_kq_packed_avx2<kQ4_K>;
    t.cols[kQ5_K] = &cols_kq_packed_avx2<kQ5_K>;
    t.cols[kQ6_K] = &cols_kq_packed_avx2<kQ6_K>;
    t.kpack = true;
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
