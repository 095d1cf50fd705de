// Activation sums of a K-quant call in the integer layouts the SIMD K-quant kernels multiply by
// their scale or min words (|sum of 32| <= 32 * 127 fits int16); plain C++ for every ISA.
#pragma once
#include <cstdint>

#include "cpu/quant/kernels.h"
#include "cpu/quant/scratch.h"

namespace eyas::cpu::quant {

// The per-16 sums as words (GGUF-row kernels): int16[T, K/16] in this thread's kernel scratch.
inline int16_t* ksums16(const Job& j) {
  const int64_t per = j.k / 16;
  int16_t* s16 = reinterpret_cast<int16_t*>(thread_scratch<kScratchKernel>(size_t(j.t * per) * 2 + 64));
  for (int64_t t = 0; t < j.t; ++t)
    for (int64_t i = 0; i < per; ++i) s16[t * per + i] = int16_t(j.act.s[t * j.act.s_per_row + i]);
  return s16;
}

// Per call, for the kernels over the K-quant packs (q4pack.h): activation sums as two int16 in one
// dword, [row][block][p], matching the packed word pairs: Q4_K / Q5_K the 32-element sums of
// sub-blocks 2p, 2p + 1 (p < 4), Q6_K the 16-element sums 2p, 2p + 1 (p < 8): kq_pairs_per_block.
constexpr int kq_pairs_per_block(WKind k) { return k == kQ6_K ? 8 : 4; }

template <WKind K>
inline int32_t* kq_sum_pairs(const Job& j) {
  constexpr int P = kq_pairs_per_block(K), per = 8 / P;  // per: 16-sums in one half of a pair
  const int64_t nb = j.k / 256;
  int32_t* out = reinterpret_cast<int32_t*>(thread_scratch<kScratchKernel>(size_t(j.t * nb * P) * 4 + 64));
  for (int64_t t = 0; t < j.t; ++t)
    for (int64_t b = 0; b < nb; ++b) {
      const int32_t* s = j.act.s + t * j.act.s_per_row + b * 16;
      for (int p = 0; p < P; ++p) {
        int32_t lo = 0, hi = 0;
        for (int q = 0; q < per; ++q) lo += s[2 * per * p + q], hi += s[2 * per * p + per + q];
        out[(t * nb + b) * P + p] = int32_t(uint32_t(uint16_t(int16_t(lo))) | (uint32_t(uint16_t(int16_t(hi))) << 16));
      }
    }
  return out;
}

}  // namespace eyas::cpu::quant
