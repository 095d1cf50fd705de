// Tree attention CPU kernel (layout and semantics: csrc/ops/attention.h, docs/kv_cache.md).
#pragma once
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// q, o: F32[n_q, n_heads, D]; k, v: [n_kv_heads, capacity, D] of F32, or F16 (uint16_t) when kv_f16;
// mask: [n_q, n_new] or null (causal).
void attention(const AttentionArgs& a, const float* q, const void* k, const void* v, bool kv_f16, const uint8_t* mask,
               float* o, ThreadPool& pool);

// One attention() call's arguments, for attention_many.
struct AttentionCall {
  AttentionArgs a;
  const float* q;
  const void *k, *v;
  bool kv_f16;
  const uint8_t* mask;
  float* o;
};

// Every call's attention in one parallel pass (several sequences of a batched forward, each over its
// own cache): the same bits as the calls one by one, since each (query, head) is computed on its own.
void attention_many(const std::vector<AttentionCall>& calls, ThreadPool& pool);

}  // namespace eyas::cpu
