#include "cpu/kv_copy.h"

#include <cstring>
#include <vector>

#include "cpu/quant/formats.h"
#include "cpu/softmax_exp.h"

namespace eyas::cpu {

namespace {

#if EYAS_X86
// Whole 16-value groups of n; returns how many were converted.
__attribute__((target("avx512f"))) int64_t to_half_avx512(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), h);
  }
  return i;
}

__attribute__((target("avx2,f16c"))) int64_t to_half_avx2(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), h);
  }
  return i;
}
#endif

// n floats -> halves, rounded to nearest even: the bits of quant::f2h (vcvtps2ph rounds the same).
void to_half(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
#if EYAS_X86
  if (use_avx512()) i = to_half_avx512(s, d, n);
  else if (use_avx2()) i = to_half_avx2(s, d, n);
#endif
  for (; i < n; ++i) d[i] = quant::f2h(s[i]);
}

}  // namespace

void kv_write(const KvCopyArgs& a, const float* src, void* cache, bool f16, ThreadPool& pool) {
  const int64_t D = a.head_dim, rows = a.rows;
  auto body = [&](int tid, int nth) {
    int64_t w0, w1;
    ThreadPool::split(rows * a.n_kv_heads, tid, nth, 1, &w0, &w1);
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t h = w / rows, t = w % rows, dst = (h * a.capacity + a.dst_start + t) * D;
      const float* s = src + (t * a.n_kv_heads + h) * D;
      if (f16) {
        to_half(s, static_cast<uint16_t*>(cache) + dst, D);
      } else {
        std::memcpy(static_cast<float*>(cache) + dst, s, D * sizeof(float));
      }
    }
  };
  // A decode step writes a few hundred bytes: waking the pool would cost more than the copy.
  if (rows * a.n_kv_heads * D < 16384) body(0, 1); else pool.run(body);
}

void kv_move_rows(const KvCopyArgs& a, const int32_t* src_slots, void* cache, size_t elem_bytes, ThreadPool& pool) {
  const int64_t m = a.rows;
  const size_t row = size_t(a.head_dim) * elem_bytes;
  // Moving in increasing order is safe when no source is overwritten before it is read.
  bool in_order = true;
  for (int64_t i = 0; i < m; ++i) in_order = in_order && src_slots[i] >= a.dst_start + i;
  auto body = [&](int tid, int nth) {
    int64_t h0, h1;
    ThreadPool::split(a.n_kv_heads, tid, nth, 1, &h0, &h1);
    std::vector<uint8_t> tmp(in_order ? 0 : size_t(m) * row);
    for (int64_t h = h0; h < h1; ++h) {
      uint8_t* head = static_cast<uint8_t*>(cache) + size_t(h) * size_t(a.capacity) * row;
      if (in_order) {
        for (int64_t i = 0; i < m; ++i)
          if (src_slots[i] != a.dst_start + i)
            std::memcpy(head + size_t(a.dst_start + i) * row, head + size_t(src_slots[i]) * row, row);
      } else {
        for (int64_t i = 0; i < m; ++i) std::memcpy(tmp.data() + size_t(i) * row, head + size_t(src_slots[i]) * row, row);
        std::memcpy(head + size_t(a.dst_start) * row, tmp.data(), size_t(m) * row);
      }
    }
  };
  if (m * a.n_kv_heads * a.head_dim < 16384) body(0, 1); else pool.run(body);
}

}  // namespace eyas::cpu
