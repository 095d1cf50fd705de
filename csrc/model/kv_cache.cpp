#include "model/kv_cache.h"

#include "ops/kv.h"

namespace eyas::model {

KVCache::KVCache(int num_layers, int num_kv_heads, int capacity, int head_dim, DType dtype) : capacity_(capacity) {
  if (capacity < 1) fail("KVCache", "capacity must be >= 1, got " + std::to_string(capacity));
  if (dtype != DType::F32 && dtype != DType::F16) fail("KVCache", "the cache holds F32 or F16");
  for (int l = 0; l < num_layers; ++l) {
    k_.push_back(Tensor::empty(dtype, {num_kv_heads, capacity, head_dim}));
    v_.push_back(Tensor::empty(dtype, {num_kv_heads, capacity, head_dim}));
  }
}

void KVCache::commit(Encoder& enc, const std::vector<int32_t>& nodes) {
  const char* op = "commit";
  const int m = int(nodes.size());
  bool identity = true;
  for (int j = 0; j < m; ++j) {
    if (nodes[j] < 0 || nodes[j] >= pending_)
      fail(op, "node " + std::to_string(nodes[j]) + " out of range: the last forward wrote " + std::to_string(pending_) +
                   " rows");
    if (j > 0 && nodes[j] <= nodes[j - 1]) fail(op, "nodes must be strictly increasing");
    identity = identity && nodes[j] == j;
  }
  if (!identity) {
    Tensor src = Tensor::empty(DType::I32, {m});
    for (int j = 0; j < m; ++j) src.data<int32_t>()[j] = length_ + nodes[j];
    for (size_t l = 0; l < k_.size(); ++l) {
      ops::kv_move_rows(enc, k_[l], src, length_);
      ops::kv_move_rows(enc, v_[l], src, length_);
    }
  }
  length_ += m;
  pending_ = 0;
}

void KVCache::truncate(int n) {
  if (n < 0 || n > length_)
    fail("truncate", "length must be in [0, " + std::to_string(length_) + "], got " + std::to_string(n));
  length_ = n;
  pending_ = 0;
}

}  // namespace eyas::model
