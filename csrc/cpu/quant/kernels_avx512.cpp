// AVX-512 (VNNI) kernel table: the portable definition compiled for AVX-512, with hand-written
// VNNI block dots for the legacy types and explicit 16-lane float dots.
#include "cpu/quant/kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "cpu/quant/kquant_sums.h"
#include "cpu/quant/isa.h"
#include "cpu/quant/q4pack.h"
#include "cpu/quant/scratch.h"
#include "cpu/softmax_exp.h"

#pragma GCC push_options
// GCC 12 flags the intrinsics' own `__Y = __Y` placeholders under a target pragma.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c,bmi2")
namespace eyas::cpu::quant {
namespace avx512_impl {
static inline float H2F(uint16_t h) { return _cvtsh_ss(h); }  // F16C: exact, as h2f
#include "cpu/quant/kdots_avx512.h"
#include "cpu/quant/dot_generic.h"
#include "cpu/quant/simd_avx512.h"
#include "cpu/quant/float_tiles_avx512.h"
#include "cpu/quant/q4rows.h"
#include "cpu/quant/q4pack_avx512.h"
#include "cpu/quant/kquant_avx512.h"
#include "cpu/quant/kqpack_avx512.h"
}  // namespace avx512_impl
}  // namespace eyas::cpu::quant
#pragma GCC pop_options

namespace eyas::cpu::quant {
const Table* table_avx512() {
  static const Table tb = [] {
    using namespace avx512_impl;
    Table t{};
    t.isa = Isa::Avx512;
    fill_generic(t);
    t.quant32 = &quant_rows32_v;
    t.quant256 = &quant_rows256_v;
    t.cols[kF32] = &cols_float_tiles<kF32>;
    t.cols[kF16] = &cols_float_tiles<kF16>;
    t.cols[kBF16] = &cols_float_tiles<kBF16>;
    t.cols[kQ8_0] = &cols_vnni_packed<kQ8_0, &cols_q8_0>;
    // VNNI over the pack at every T: the GGUF rows' dots need horizontal sums (~6x the ops at T = 32).
    t.q8pack_max_rows = INT64_MAX;
    t.cols[kQ4_0] = &cols_vnni_packed<kQ4_0, &cols_q4x4<kQ4_0>>;
    t.cols[kQ4_1] = &cols_vnni_packed<kQ4_1, &cols_q4x4<kQ4_1>>;
    t.q4pack_min_rows = 1;
    t.cols[kQ5_0] = &cols_vnni_packed<kQ5_0, &cols_q4x4<kQ5_0>>;
    t.cols[kQ5_1] = &cols_vnni_packed<kQ5_1, &cols_q4x4<kQ5_1>>;
    t.q5pack = true;
    t.cols[kQ4_K] = &cols_kq_packed<kQ4_K>;  // the GGUF path (cols_kquant_v) when there is no pack
    t.cols[kQ5_K] = &cols_kq_packed<kQ5_K>;
    t.kpack = true;
    t.cols[kQ6_K] = &cols_kq_packed<kQ6_K>;
    return t;
  }();
  return &tb;
}
}  // namespace eyas::cpu::quant
#else
namespace eyas::cpu::quant {
const Table* table_avx512() { return nullptr; }
}  // namespace eyas::cpu::quant
#endif
