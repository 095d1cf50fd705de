// RMSNorm: y = x / sqrt(mean(x^2) + eps) * w. One row = one independent task, summed in
// 16 fixed lanes and folded in a fixed order, so a row's bits never depend on T or threads.
#include <cmath>

#include "cpu/kernels.h"

namespace eyas::cpu {

void rms_norm(const RmsNormArgs& a, const float* x, const float* w, float* y, ThreadPool& pool) {
  auto body = [&](int tid, int nth) {
    int64_t r0, r1;
    ThreadPool::split(a.rows, tid, nth, 1, &r0, &r1);
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * a.dim;
      float* yr = y + r * a.dim;
      float lanes[16] = {0};
      int i = 0;
      for (; i + 16 <= a.dim; i += 16)
        for (int l = 0; l < 16; ++l) lanes[l] += xr[i + l] * xr[i + l];
      for (; i < a.dim; ++i) lanes[i & 15] += xr[i] * xr[i];
      for (int s = 8; s >= 1; s /= 2)
        for (int l = 0; l < s; ++l) lanes[l] += lanes[l + s];
      const float scale = 1.0f / std::sqrt(lanes[0] / float(a.dim) + a.eps);
      for (int j = 0; j < a.dim; ++j) yr[j] = (xr[j] * scale) * w[j];
    }
  };
  // A few rows cost less than waking the workers; rows are independent, so bits are unchanged.
  if (int64_t(a.rows) * a.dim < 16384)
    body(0, 1);
  else
    pool.run(body);
}

}  // namespace eyas::cpu
