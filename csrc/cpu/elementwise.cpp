// Elementwise kernels over a flat [rows * cols] range split in 16-element-aligned chunks; the
// exp-based ones have AVX-512 and AVX2 paths that give the scalar path's bits (cpu/softmax_exp.h).
#include "cpu/elementwise.h"

#include <algorithm>

#include "cpu/softmax_exp.h"

namespace eyas::cpu {
namespace {

// Runs fn(begin, end) over [0, n): on the caller alone for small n (a decode step's vectors).
template <typename F>
void for_range(int64_t n, ThreadPool& pool, F&& fn) {
  if (n < 32768) {
    fn(int64_t(0), n);
    return;
  }
  pool.run([&](int tid, int nth) {
    int64_t b, e;
    ThreadPool::split(n, tid, nth, 16, &b, &e);
    if (b < e) fn(b, e);
  });
}

inline float silu_1(float x) { return x / (1.0f + exp_scalar(-x)); }
inline float silu_mul_1(float g, float u) { return silu_1(g) * u; }
inline float sigmoid_mul_1(float x, float g) { return x / (1.0f + exp_scalar(-g)); }

#if EYAS_X86
// x / (1 + exp(-g)) lane by lane: silu(x) when g is x, x * sigmoid(g) otherwise. The scalar helpers'
// operations.
__attribute__((target("avx512f"), always_inline)) inline __m512 over_one_plus_exp_neg16(__m512 x, __m512 g) {
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), g))));
}
__attribute__((target("avx2,fma"), always_inline)) inline __m256 over_one_plus_exp_neg8(__m256 x, __m256 g) {
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), g))));
}

// mode 0: silu(a) * b; mode 1: a * sigmoid(b). Same operations as the scalar helpers above.
__attribute__((target("avx512f"))) void gated_avx512(int mode, const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(int(n - i < 16 ? n - i : 16));
    const __m512 av = _mm512_maskz_loadu_ps(m, a + i), bv = _mm512_maskz_loadu_ps(m, b + i);
    const __m512 r = mode == 0 ? _mm512_mul_ps(over_one_plus_exp_neg16(av, av), bv) : over_one_plus_exp_neg16(av, bv);
    _mm512_mask_storeu_ps(y + i, m, r);
  }
}

__attribute__((target("avx2,fma"))) void gated_avx2(int mode, const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = tail_mask8(int(n - i < 8 ? n - i : 8));
    const __m256 av = _mm256_maskload_ps(a + i, m), bv = _mm256_maskload_ps(b + i, m);
    const __m256 r = mode == 0 ? _mm256_mul_ps(over_one_plus_exp_neg8(av, av), bv) : over_one_plus_exp_neg8(av, bv);
    _mm256_maskstore_ps(y + i, m, r);
  }
}

__attribute__((target("avx512f"))) int64_t silu_avx512(float* y, int64_t n) {  // returns where it stopped
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(y + i);
    _mm512_storeu_ps(y + i, over_one_plus_exp_neg16(x, x));
  }
  return i;
}

__attribute__((target("avx2,fma"))) int64_t silu_avx2(float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(y + i);
    _mm256_storeu_ps(y + i, over_one_plus_exp_neg8(x, x));
  }
  return i;
}
#endif

// y[i] = f(x[i], g[i]) over [0, n); x, g, y offset alike.
void gated_span(int mode, const float* x, const float* g, float* y, int64_t n) {
#if EYAS_X86
  if (use_avx512()) return gated_avx512(mode, x, g, y, n);
  if (use_avx2()) return gated_avx2(mode, x, g, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = mode == 0 ? silu_mul_1(x[i], g[i]) : sigmoid_mul_1(x[i], g[i]);
}

// Inputs whose rows lie a.in_stride apart (the halves of fused rows) are walked row segment by row
// segment; every element gets the same operations either way.
void gated(int mode, const ElementwiseArgs& a, const float* x, const float* g, float* y, ThreadPool& pool) {
  const int64_t cols = a.cols, stride = a.in_stride ? a.in_stride : cols;
  for_range(int64_t(a.rows) * cols, pool, [&](int64_t b, int64_t e) {
    if (stride == cols) return gated_span(mode, x + b, g + b, y + b, e - b);
    for (int64_t i = b; i < e;) {
      const int64_t r = i / cols, c0 = i - r * cols, n = std::min<int64_t>(cols - c0, e - i);
      gated_span(mode, x + r * stride + c0, g + r * stride + c0, y + i, n);
      i += n;
    }
  });
}

}  // namespace

void add(const ElementwiseArgs& a, const float* x, const float* b, float* y, ThreadPool& pool) {
  const int64_t cols = a.cols;
  for_range(int64_t(a.rows) * cols, pool, [&](int64_t s, int64_t e) {
    if (!a.broadcast) {
      for (int64_t i = s; i < e; ++i) y[i] = x[i] + b[i];
      return;
    }
    for (int64_t i = s; i < e;) {  // walk row segments so the inner loop vectorizes
      const int64_t r = i / cols, c0 = i - r * cols, c1 = std::min<int64_t>(cols, c0 + (e - i));
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      for (int64_t c = c0; c < c1; ++c) yr[c] = xr[c] + b[c];
      i += c1 - c0;
    }
  });
}

void silu_inplace(float* y, int64_t n) {
  int64_t i = 0;
#if EYAS_X86
  if (use_avx512()) i = silu_avx512(y, n);
  else if (use_avx2()) i = silu_avx2(y, n);
#endif
  for (; i < n; ++i) y[i] = silu_1(y[i]);
}

void silu_mul(const ElementwiseArgs& a, const float* g, const float* u, float* y, ThreadPool& pool) {
  gated(0, a, g, u, y, pool);
}

void sigmoid_mul(const ElementwiseArgs& a, const float* x, const float* g, float* y, ThreadPool& pool) {
  gated(1, a, x, g, y, pool);
}

void scale(const ElementwiseArgs& a, const float* x, float* y, ThreadPool& pool) {
  const float s = a.s;
  for_range(int64_t(a.rows) * a.cols, pool, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = x[i] * s;
  });
}

}  // namespace eyas::cpu
