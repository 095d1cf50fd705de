#include "model/layers/kv_cache.h"

#include "ops/kv.h"

namespace eyas::model {

KVCache::KVCache(int num_kv_heads, int capacity, int head_dim, DType dtype) {
  if (capacity < 1) fail("KVCache", "capacity must be >= 1, got " + std::to_string(capacity));
  if (dtype != DType::F32 && dtype != DType::F16) fail("KVCache", "the cache holds F32 or F16");
  k_ = Tensor::empty(dtype, {num_kv_heads, capacity, head_dim});
  v_ = Tensor::empty(dtype, {num_kv_heads, capacity, head_dim});
}

void KVCache::commit(Encoder& enc, const CommitPlan& plan) {
  if (plan.identity) return;
  ops::kv_move_rows(enc, k_, plan.src_slots, plan.length);
  ops::kv_move_rows(enc, v_, plan.src_slots, plan.length);
}

size_t KVCache::bytes(int length) const {
  const size_t per_slot = k_.nbytes() / size_t(k_.dim(1));  // every head's row of one slot
  return 2 * per_slot * size_t(length);
}

}  // namespace eyas::model
