// Argmax and top-k. Both results are defined by a total order, not by the scan, so any path,
// split or row count gives the same answer.
#include "cpu/topk.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/softmax_exp.h"
#include "ops/host_rows.h"

namespace eyas::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int32_t argmax_scalar(const float* x, int n) {
  float best = kNegInf;
  int32_t bi = -1;
  for (int i = 0; i < n; ++i)
    if (x[i] > best || (bi < 0 && x[i] == x[i])) best = x[i], bi = i;
  return bi < 0 ? 0 : bi;
}

#if EYAS_X86
__attribute__((target("avx512f"))) int32_t argmax_avx512(const float* x, int n) {
  const __m512 ninf = _mm512_set1_ps(kNegInf);
  __m512 mv = ninf;
  for (int i = 0; i < n; i += 16) {  // NaN lanes keep the running max
    const __m512 v = _mm512_mask_loadu_ps(ninf, tail_mask(n - i), x + i);
    mv = _mm512_mask_max_ps(mv, _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), mv, v);
  }
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mv));
  for (int i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __mmask16 hit = _mm512_mask_cmp_ps_mask(k, _mm512_maskz_loadu_ps(k, x + i), m, _CMP_EQ_OQ);
    if (hit) return i + __builtin_ctz(hit);
  }
  return 0;
}

__attribute__((target("avx2"))) int32_t argmax_avx2(const float* x, int n) {
  const __m256 ninf = _mm256_set1_ps(kNegInf);
  __m256 mv = ninf;
  for (int i = 0; i < n; i += 8) {  // NaN and tail lanes keep the running max
    const __m256 k = _mm256_castsi256_ps(tail_mask8(n - i));
    const __m256 v = _mm256_maskload_ps(x + i, _mm256_castps_si256(k));
    mv = _mm256_blendv_ps(mv, _mm256_max_ps(mv, v), _mm256_and_ps(k, _mm256_cmp_ps(v, v, _CMP_ORD_Q)));
  }
  const __m256 m = _mm256_set1_ps(hmax8_avx2(mv));
  for (int i = 0; i < n; i += 8) {
    const __m256i k = tail_mask8(n - i);
    const int hit = _mm256_movemask_ps(_mm256_and_ps(_mm256_castsi256_ps(k), _mm256_cmp_ps(_mm256_maskload_ps(x + i, k), m, _CMP_EQ_OQ)));
    if (hit) return i + __builtin_ctz(hit);
  }
  return 0;
}
#endif

struct Entry {
  float key;  // value with NaN mapped to -inf
  int32_t idx;
};
// a ranks above b
inline bool better(const Entry& a, const Entry& b) { return a.key > b.key || (a.key == b.key && a.idx < b.idx); }
inline float key_of(float v) { return v != v ? kNegInf : v; }

// Min-heap on rank (worst entry at the front) holding the best k seen so far.
struct TopK {
  std::vector<Entry> heap;
  int k;
  void offer(float v, int32_t i) {
    const Entry e{key_of(v), i};
    auto worse_first = [](const Entry& a, const Entry& b) { return better(a, b); };
    if (int(heap.size()) < k) {
      heap.push_back(e);
      std::push_heap(heap.begin(), heap.end(), worse_first);
    } else if (better(e, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), worse_first);
      heap.back() = e;
      std::push_heap(heap.begin(), heap.end(), worse_first);
    }
  }
};

#if EYAS_X86
// Skips 16 elements at a time unless one beats the current k-th key (ties lose: their index is larger).
__attribute__((target("avx512f"))) int scan_avx512(const float* x, int n, int i0, TopK& t) {
  for (; i0 < n; i0 += 16) {
    const __mmask16 m = tail_mask(n - i0);
    const __mmask16 hit =
        _mm512_mask_cmp_ps_mask(m, _mm512_maskz_loadu_ps(m, x + i0), _mm512_set1_ps(t.heap.front().key), _CMP_GT_OQ);
    if (hit)
      for (int l = 0; l < 16 && i0 + l < n; ++l) t.offer(x[i0 + l], i0 + l);
  }
  return n;
}

__attribute__((target("avx2"))) int scan_avx2(const float* x, int n, int i0, TopK& t) {
  for (; i0 < n; i0 += 8) {
    const __m256i m = tail_mask8(n - i0);
    const __m256 gt = _mm256_cmp_ps(_mm256_maskload_ps(x + i0, m), _mm256_set1_ps(t.heap.front().key), _CMP_GT_OQ);
    if (_mm256_movemask_ps(_mm256_and_ps(gt, _mm256_castsi256_ps(m))))
      for (int l = 0; l < 8 && i0 + l < n; ++l) t.offer(x[i0 + l], i0 + l);
  }
  return n;
}
#endif

// simd: 0 scalar, 1 AVX2, 2 AVX-512.
void topk_row(const float* x, int n, int k, int simd, float* values, int32_t* idx) {
  TopK t{{}, k};
  t.heap.reserve(k);
  int i = 0;
  for (; i < n && int(t.heap.size()) < k; ++i) t.offer(x[i], i);
#if EYAS_X86
  if (simd == 2) i = scan_avx512(x, n, i, t);
  if (simd == 1) i = scan_avx2(x, n, i, t);
#endif
  for (; i < n; ++i)
    if (key_of(x[i]) > t.heap.front().key) t.offer(x[i], i);
  std::sort(t.heap.begin(), t.heap.end(), better);
  for (int j = 0; j < k; ++j) values[j] = x[t.heap[j].idx], idx[j] = t.heap[j].idx;
}

template <typename F>
void for_rows(int64_t rows, ThreadPool& pool, F&& fn) {
  if (rows == 1) return fn(int64_t(0), int64_t(1));
  pool.run([&](int tid, int nth) {
    int64_t r0, r1;
    ThreadPool::split(rows, tid, nth, 1, &r0, &r1);
    if (r0 < r1) fn(r0, r1);
  });
}

}  // namespace

double exp_sum_scalar(const float* x, int64_t n, float mx) {
  double lanes[16] = {0.0};
  for (int64_t i = 0; i < n; ++i)
    if (x[i] == x[i]) lanes[i % 16] += double(exp_scalar(x[i] - mx));
  double s = 0.0;
  for (double l : lanes) s += l;
  return s;
}

#if EYAS_X86
__attribute__((target("avx512f"))) double exp_sum_avx512(const float* x, int64_t n, float mx) {
  const __m512 ninf = _mm512_set1_ps(kNegInf), m = _mm512_set1_ps(mx);
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();  // lanes 0-7, 8-15
  for (int64_t i = 0; i < n; i += 16) {
    __m512 v = _mm512_mask_loadu_ps(ninf, tail_mask(int(std::min<int64_t>(n - i, 16))), x + i);
    v = _mm512_mask_mov_ps(ninf, _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);  // NaN adds exp(-inf) = 0
    const __m512 e = exp_avx512(_mm512_sub_ps(v, m));
    lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  alignas(64) double lanes[16];
  _mm512_store_pd(lanes, lo), _mm512_store_pd(lanes + 8, hi);
  double s = 0.0;
  for (double l : lanes) s += l;
  return s;
}
#endif

int32_t argmax_row(const float* x, int n) {
#if EYAS_X86
  if (use_avx512()) return argmax_avx512(x, n);
  if (use_avx2()) return argmax_avx2(x, n);
#endif
  return argmax_scalar(x, n);
}

// One row this long is split between the threads (a 248K-token vocabulary's logits: 1 MB, ~100 us on one
// core); each part's first maximum, then the largest of those, the earliest part on ties: the same index.
constexpr int kSplitArgmaxCols = 65536;

void argmax(const TopkArgs& a, const float* x, int32_t* idx, ThreadPool& pool) {
  if (a.rows == 1 && a.cols >= kSplitArgmaxCols && pool.num_threads() > 1) {
    std::vector<int32_t> part(size_t(pool.num_threads()), -1);  // per thread: its part's index, -1: none
    pool.run([&](int tid, int nth) {
      int64_t c0, c1;
      ThreadPool::split(a.cols, tid, nth, 16, &c0, &c1);
      if (c0 >= c1) return;
      const int32_t i = int32_t(c0) + argmax_row(x + c0, int(c1 - c0));
      part[size_t(tid)] = x[i] == x[i] ? i : -1;  // an all-NaN part offers nothing
    });
    int32_t best = -1;
    for (int32_t i : part)  // parts in column order: a strictly larger value replaces, a tie keeps the earlier
      if (i >= 0 && (best < 0 || x[i] > x[best])) best = i;
    idx[0] = best < 0 ? 0 : best;
    return;
  }
  for_rows(a.rows, pool, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) idx[r] = argmax_row(x + r * a.cols, a.cols);
  });
}

void topk(const TopkArgs& a, const float* x, float* values, int32_t* idx, ThreadPool& pool) {
  const int simd = use_avx512() ? 2 : use_avx2() ? 1 : 0;
  for_rows(a.rows, pool, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) topk_row(x + r * a.cols, a.cols, a.k, simd, values + r * a.k, idx + r * a.k);
  });
}

}  // namespace eyas::cpu

namespace eyas::ops {
int32_t argmax_row_host(const float* x, int n) { return cpu::argmax_row(x, n); }
void topk_row_host(const float* x, int n, int k, float* values, int32_t* idx) {
  cpu::topk_row(x, n, k, cpu::use_avx512() ? 2 : cpu::use_avx2() ? 1 : 0, values, idx);
}
double exp_sum_row_host(const float* x, int64_t n, float mx) {
#if EYAS_X86
  if (cpu::use_avx512()) return cpu::exp_sum_avx512(x, n, mx);
#endif
  return cpu::exp_sum_scalar(x, n, mx);
}
}  // namespace eyas::ops
