// Per-layer K and V caches, F32 or F16 [n_kv_heads, capacity, head_dim] (slot-major per head, so a
// query's visible keys are contiguous rows). Slots [0, length) are committed; a forward writes
// its T new rows at [length, length + T) and commit() keeps a subset of them.
#pragma once
#include <vector>

#include "core/encoder.h"

namespace eyas::model {

class KVCache {
 public:
  // dtype: F32, or F16 (half the bytes attention reads; values rounded to nearest even on write).
  KVCache(int num_layers, int num_kv_heads, int capacity, int head_dim, DType dtype = DType::F32);

  const Tensor& k(int layer) const { return k_[layer]; }
  const Tensor& v(int layer) const { return v_[layer]; }
  int capacity() const { return capacity_; }
  DType dtype() const { return k_.empty() ? DType::F32 : k_[0].dtype; }
  int length() const { return length_; }
  // Rows written after `length` by the last forward, which commit() may keep.
  int pending() const { return pending_; }
  void set_pending(int n) { pending_ = n; }

  // Moves slot length+nodes[j] to slot length+j byte for byte in every layer, then length += m.
  // nodes: strictly increasing, each < pending(). Records the moves on `enc`.
  void commit(Encoder& enc, const std::vector<int32_t>& nodes);
  void truncate(int n);
  void reset() { length_ = 0, pending_ = 0; }

 private:
  std::vector<Tensor> k_, v_;
  int capacity_;
  int length_ = 0, pending_ = 0;
};

}  // namespace eyas::model
