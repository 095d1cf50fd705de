// The attention kind's LayerState: one layer's K and V, F32 or F16 [n_kv_heads, capacity, head_dim]
// (slot-major per head, so a query's visible keys are contiguous rows; docs/kv_cache.md).
// Slots [0, length) are committed; a forward writes its T rows at [length, length + T) and
// commit() moves the accepted ones into place byte for byte.
#pragma once

#include "model/layer_state.h"

namespace eyas::model {

class KVCache : public LayerState {
 public:
  // dtype: F32, or F16 (half the bytes attention reads; values rounded to nearest even on write).
  KVCache(int num_kv_heads, int capacity, int head_dim, DType dtype);

  const Tensor& k() const { return k_; }
  const Tensor& v() const { return v_; }

  // The rows are written by the layer's encode and the tree lives in the chunk's mask: nothing to do.
  void prepare(const ForwardPlan&) override {}
  // Slot length+nodes[j] -> slot length+j in K and V (ops::kv_move_rows), unless already in place.
  void commit(Encoder& enc, const CommitPlan& plan) override;
  // Slots past the committed length are simply overwritten by the next forward.
  void truncate(int, int) override {}
  void reset() override {}
  size_t bytes(int length) const override;
  size_t held_bytes() const override { return k_.nbytes() + v_.nbytes(); }
  bool batchable() const override { return true; }

 private:
  Tensor k_, v_;
};

}  // namespace eyas::model
