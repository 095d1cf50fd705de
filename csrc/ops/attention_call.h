// The argument of ops::attention_many and Backend::attention_many, on its own so that the backend
// interface (ops/backend.h) reads it without reading the ops.
#pragma once
#include "core/tensor.h"

namespace eyas::ops {

// One call of attention_many: its own queries, cache, prefix, mask and output (shapes: ops/attention.h).
struct AttentionCall {
  Tensor q, k_cache, v_cache;
  int prefix_len = 0;
  Tensor mask;  // undefined: causal
  Tensor o;
};

}  // namespace eyas::ops
