#pragma once
#include <vector>

#include "core/encoder.h"
#include "ops/attention_call.h"

namespace eyas::ops {

// Tree/causal attention over a slot-major KV cache (docs/kv_cache.md).
// q, o: F32[Tq, Hq, D]; k_cache, v_cache: F32[Hkv, cap, D] with Hq % Hkv == 0.
// Tn new slots [prefix_len, prefix_len+Tn) already hold K/V; the Tq queries are the LAST Tq of them
// (query i = slot prefix_len+Tn-Tq+i). mask: U8[Tq, Tn] (Tn >= Tq), mask[i, j] != 0 when query i sees
// new slot j; Tensor{} means causal with Tn = Tq. Every query sees all of [0, prefix_len).
// A query's output is bit-identical to a decode (Tq = 1) over its visible keys laid out contiguously.
void attention(Encoder& enc, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int prefix_len,
               const Tensor& mask, float scale, const Tensor& o);

// Several independent calls with one scale (the sequences of a batched forward, each over its own
// cache) as one dispatch, so small decode calls share the threads; each call's output is the bits
// attention() gives it alone. Checks every call as attention() does.
void attention_many(Encoder& enc, const std::vector<AttentionCall>& calls, float scale);

}  // namespace eyas::ops
