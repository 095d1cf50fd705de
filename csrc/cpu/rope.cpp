// RoPE. Each token's angles come from its own position only (angle = float(pos) * inv_freq[k], as
// Hugging Face computes it in float32; cos/sin evaluated in double), never from a recurrence over
// positions, so a row's bits do not depend on T or on which rows share the call.
#include "cpu/rope.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace eyas::cpu {

void rope(const RopeArgs& a, const float* x, const int32_t* pos, const float* inv_freq, float* y, ThreadPool& pool) {
  const int half = a.rot_dim / 2, D = a.head_dim;
  auto body = [&](int tid, int nth) {
    int64_t t0, t1;
    ThreadPool::split(a.tokens, tid, nth, 1, &t0, &t1);
    // The last token's table is kept per thread: a decode step rotates q and k of every layer at
    // one position, so 2 * layers calls share one table (cos/sin in double were ~1% of a step).
    thread_local std::vector<float> cs, freq;
    thread_local int32_t cs_pos = 0;
    for (int64_t t = t0; t < t1; ++t) {
      const bool hit = cs_pos == pos[t] && freq.size() == size_t(half) &&
                       std::equal(freq.begin(), freq.end(), inv_freq, [](float x, float y) {
                         return std::memcmp(&x, &y, sizeof(float)) == 0;
                       });
      if (!hit) {
        cs.resize(size_t(2 * half));
        freq.assign(inv_freq, inv_freq + half);
        cs_pos = pos[t];
        for (int k = 0; k < half; ++k) {
          const float angle = float(pos[t]) * inv_freq[k];
          cs[2 * k] = float(std::cos(double(angle)));
          cs[2 * k + 1] = float(std::sin(double(angle)));
        }
      }
      for (int h = 0; h < a.heads; ++h) {
        const float* xr = x + (t * a.heads + h) * D;
        float* yr = y + (t * a.heads + h) * D;
        // NeoX pairs (k, k + half); interleaved pairs (2k, 2k + 1).
        const int stride = a.style == 0 ? 1 : 2, offset = a.style == 0 ? half : 1;
        for (int k = 0; k < half; ++k) {
          const int i0 = k * stride, i1 = i0 + offset;
          const float x0 = xr[i0], x1 = xr[i1], c = cs[2 * k], s = cs[2 * k + 1];
          yr[i0] = x0 * c - x1 * s;
          yr[i1] = x1 * c + x0 * s;
        }
        if (yr != xr)
          for (int d = a.rot_dim; d < D; ++d) yr[d] = xr[d];
      }
    }
  };
  // Decode rotates one token: cheaper than waking the pool.
  if (a.tokens < 4) body(0, 1); else pool.run(body);
}

}  // namespace eyas::cpu
