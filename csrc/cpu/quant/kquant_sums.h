// Per-16 activation sums of a K-quant call as int16 words, for SIMD K-quant kernels that multiply
// them by the scale or min words (|sum| <= 16 * 127 fits int16); plain C++ for every ISA.
#pragma once
#include <cstdint>

#include "cpu/quant/kernels.h"
#include "cpu/quant/scratch.h"

namespace eyas::cpu::quant {

// s16: int16[T, K/16] in this thread's kernel scratch.
inline int16_t* ksums16(const Job& j) {
  const int64_t per = j.k / 16;
  int16_t* s16 = reinterpret_cast<int16_t*>(thread_scratch<kScratchKernel>(size_t(j.t * per) * 2 + 64));
  for (int64_t t = 0; t < j.t; ++t)
    for (int64_t i = 0; i < per; ++i) s16[t * per + i] = int16_t(j.act.s[t * j.act.s_per_row + i]);
  return s16;
}

}  // namespace eyas::cpu::quant
