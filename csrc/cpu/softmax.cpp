// Softmax: z = (x - max) / temperature; e = exp(z) summed into 16 lanes (element i -> lane i % 16)
// and folded 8/4/2/1; y = e / sum, or z - log(sum). One row per task; scalar, AVX2 and AVX-512 paths
// perform the same operations, so the bits never depend on the path, T or threads.
#include "cpu/softmax.h"

#include <cmath>
#include <limits>

#include "cpu/softmax_exp.h"
#include "ops/host_rows.h"

namespace eyas::cpu {
namespace {

void row_scalar(const SoftmaxArgs& a, const float* x, float* y) {
  const int n = a.cols;
  float m = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < n; ++i)
    if (x[i] > m) m = x[i];
  float lanes[16] = {0};
  for (int i = 0; i < n; ++i) {
    const float z = (x[i] - m) / a.temperature;
    const float e = exp_scalar(z);
    lanes[i & 15] += e;
    y[i] = a.log ? z : e;
  }
  const float sum = fold16_scalar(lanes);
  if (a.log) {
    const float ls = float(std::log(double(sum)));
    for (int i = 0; i < n; ++i) y[i] = y[i] - ls;
  } else {
    for (int i = 0; i < n; ++i) y[i] = y[i] / sum;
  }
}

#if EYAS_X86
__attribute__((target("avx512f"))) void row_avx512(const SoftmaxArgs& a, const float* x, float* y) {
  const int n = a.cols;
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 mv = ninf;
  for (int i = 0; i < n; i += 16) mv = _mm512_max_ps(mv, _mm512_mask_loadu_ps(ninf, tail_mask(n - i), x + i));
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mv)), t = _mm512_set1_ps(a.temperature);
  __m512 lanes = _mm512_setzero_ps();
  for (int i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 z = _mm512_div_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), m), t);
    const __m512 e = exp_avx512(z);
    lanes = _mm512_add_ps(lanes, _mm512_maskz_mov_ps(k, e));
    _mm512_mask_storeu_ps(y + i, k, a.log ? z : e);
  }
  const float sum = fold16_avx512(lanes);
  if (a.log) {
    const __m512 ls = _mm512_set1_ps(float(std::log(double(sum))));
    for (int i = 0; i < n; i += 16) {
      const __mmask16 k = tail_mask(n - i);
      _mm512_mask_storeu_ps(y + i, k, _mm512_sub_ps(_mm512_maskz_loadu_ps(k, y + i), ls));
    }
  } else {
    const __m512 s = _mm512_set1_ps(sum);
    for (int i = 0; i < n; i += 16) {
      const __mmask16 k = tail_mask(n - i);
      _mm512_mask_storeu_ps(y + i, k, _mm512_div_ps(_mm512_maskz_loadu_ps(k, y + i), s));
    }
  }
}

// The same operations on 8 lanes; the 16 sum lanes are two vectors (elements 16c + 0..7, + 8..15).
__attribute__((target("avx2,fma"))) void row_avx2(const SoftmaxArgs& a, const float* x, float* y) {
  const int n = a.cols;
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 mv = ninf;
  for (int i = 0; i < n; i += 8) {
    const __m256i k = tail_mask8(n - i);
    mv = _mm256_max_ps(mv, _mm256_blendv_ps(ninf, _mm256_maskload_ps(x + i, k), _mm256_castsi256_ps(k)));
  }
  const __m256 m = _mm256_set1_ps(hmax8_avx2(mv)), t = _mm256_set1_ps(a.temperature);
  __m256 lanes[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int i = 0; i < n; i += 8) {
    const __m256i k = tail_mask8(n - i);
    const __m256 z = _mm256_div_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, k), m), t);
    const __m256 e = exp_avx2(z);
    lanes[(i >> 3) & 1] = _mm256_add_ps(lanes[(i >> 3) & 1], _mm256_and_ps(e, _mm256_castsi256_ps(k)));
    _mm256_maskstore_ps(y + i, k, a.log ? z : e);
  }
  const float sum = fold16_avx2(lanes[0], lanes[1]);
  const __m256 ls = _mm256_set1_ps(a.log ? float(std::log(double(sum))) : sum);
  for (int i = 0; i < n; i += 8) {
    const __m256i k = tail_mask8(n - i);
    const __m256 v = _mm256_maskload_ps(y + i, k);
    _mm256_maskstore_ps(y + i, k, a.log ? _mm256_sub_ps(v, ls) : _mm256_div_ps(v, ls));
  }
}
#endif

// One row by the widest path allowed; every path gives the same bits. In place is fine: each pass
// reads an element before it writes it.
void row(const SoftmaxArgs& a, const float* x, float* y) {
#if EYAS_X86
  if (use_avx512()) return row_avx512(a, x, y);
  if (use_avx2()) return row_avx2(a, x, y);
#endif
  row_scalar(a, x, y);
}

}  // namespace

void softmax(const SoftmaxArgs& a, const float* x, float* y, ThreadPool& pool) {
  auto body = [&](int tid, int nth) {
    int64_t r0, r1;
    ThreadPool::split(a.rows, tid, nth, 1, &r0, &r1);
    for (int64_t r = r0; r < r1; ++r) row(a, x + r * a.cols, y + r * a.cols);
  };
  if (a.rows == 1) body(0, 1); else pool.run(body);
}

void softmax_row(const float* x, int n, float temperature, float* y) {
  row(SoftmaxArgs{1, n, temperature, 0}, x, y);
}

}  // namespace eyas::cpu

namespace eyas::ops {
void softmax_row_host(const float* x, int n, float temperature, float* y) { cpu::softmax_row(x, n, temperature, y); }
}  // namespace eyas::ops
