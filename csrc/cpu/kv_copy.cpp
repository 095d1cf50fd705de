#include "cpu/kv_copy.h"

#include <cstring>
#include <vector>

namespace eyas::cpu {

void kv_write(const KvCopyArgs& a, const float* src, float* cache, ThreadPool& pool) {
  const int64_t D = a.head_dim, rows = a.rows;
  auto body = [&](int tid, int nth) {
    int64_t w0, w1;
    ThreadPool::split(rows * a.n_kv_heads, tid, nth, 1, &w0, &w1);
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t h = w / rows, t = w % rows;
      std::memcpy(cache + (h * a.capacity + a.dst_start + t) * D, src + (t * a.n_kv_heads + h) * D, D * sizeof(float));
    }
  };
  // A decode step writes a few hundred bytes: waking the pool would cost more than the copy.
  if (rows * a.n_kv_heads * D < 16384) body(0, 1); else pool.run(body);
}

void kv_move_rows(const KvCopyArgs& a, const int32_t* src_slots, float* cache, ThreadPool& pool) {
  const int64_t D = a.head_dim, m = a.rows;
  // Moving in increasing order is safe when no source is overwritten before it is read.
  bool in_order = true;
  for (int64_t i = 0; i < m; ++i) in_order = in_order && src_slots[i] >= a.dst_start + i;
  auto body = [&](int tid, int nth) {
    int64_t h0, h1;
    ThreadPool::split(a.n_kv_heads, tid, nth, 1, &h0, &h1);
    std::vector<float> tmp(in_order ? 0 : size_t(m * D));
    for (int64_t h = h0; h < h1; ++h) {
      float* head = cache + h * a.capacity * D;
      if (in_order) {
        for (int64_t i = 0; i < m; ++i)
          if (src_slots[i] != a.dst_start + i)
            std::memcpy(head + (a.dst_start + i) * D, head + int64_t(src_slots[i]) * D, D * sizeof(float));
      } else {
        for (int64_t i = 0; i < m; ++i) std::memcpy(tmp.data() + i * D, head + int64_t(src_slots[i]) * D, D * sizeof(float));
        std::memcpy(head + a.dst_start * D, tmp.data(), m * D * sizeof(float));
      }
    }
  };
  if (m * a.n_kv_heads * D < 16384) body(0, 1); else pool.run(body);
}

}  // namespace eyas::cpu
