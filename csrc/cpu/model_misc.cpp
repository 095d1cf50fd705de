// Row-parallel copies and gates; each row is independent, so results never depend on threads.
#include "cpu/model_misc.h"

#include <cmath>
#include <cstring>

namespace eyas::cpu {

void copy_cols(int64_t rows, int64_t n, const float* x, int64_t x_stride, float* y, int64_t y_stride,
               ThreadPool& pool) {
  // Small copies are cheaper on one thread than a pool wake-up.
  if (rows * n < 16384) {
    for (int64_t r = 0; r < rows; ++r) std::memcpy(y + r * y_stride, x + r * x_stride, size_t(n) * sizeof(float));
    return;
  }
  pool.run([&](int tid, int nth) {
    int64_t r0, r1;
    ThreadPool::split(rows, tid, nth, 1, &r0, &r1);
    for (int64_t r = r0; r < r1; ++r) std::memcpy(y + r * y_stride, x + r * x_stride, size_t(n) * sizeof(float));
  });
}

void sigmoid_scale_rows(int64_t rows, int64_t n, const float* x, const float* g, float* y, ThreadPool& pool) {
  for (int64_t r = 0; r < rows; ++r) {
    const float s = 1.0f / (1.0f + std::exp(-g[r]));
    for (int64_t j = 0; j < n; ++j) y[r * n + j] = x[r * n + j] * s;
  }
}

}  // namespace eyas::cpu
