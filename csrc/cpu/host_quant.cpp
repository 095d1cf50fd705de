// Host-side weight rows for the draft head's coarse copy and rescoring (csrc/speculative/drafter.cpp):
// a row dequantized from any stored type, a row quantized to Q4_0. Called at load and between steps.
#include <algorithm>
#include <cmath>

#include "cpu/embedding.h"
#include "cpu/quant/formats.h"
#include "ops/host_rows.h"

namespace eyas::ops {

void dequantize_row_host(int32_t wtype, const uint8_t* row, int64_t k, float* y) {
  cpu::dequantize_row(wtype, row, k, y);
}

void quantize_row_q4_0_host(const float* x, int64_t k, uint8_t* out) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32, out += cpu::quant::kQ4_0Bytes) {
    // The element of largest magnitude maps to -8, so its sign decides the scale's (GGUF's choice).
    float amax = 0.0f, extreme = 0.0f;
    for (int j = 0; j < 32; ++j)
      if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), extreme = x[j];
    const float d = extreme / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = cpu::quant::f2h(d);
    out[0] = uint8_t(dh & 0xff), out[1] = uint8_t(dh >> 8);
    for (int j = 0; j < 16; ++j) {
      const int lo = std::clamp(int(x[j] * id + 8.5f), 0, 15), hi = std::clamp(int(x[j + 16] * id + 8.5f), 0, 15);
      out[2 + j] = uint8_t(lo | (hi << 4));
    }
  }
}

}  // namespace eyas::ops
