// Tree attention CPU kernel (layout and semantics: csrc/ops/attention.h, docs/kv_cache.md).
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// q, o: [n_q, n_heads, D]; k, v: [n_kv_heads, capacity, D]; mask: [n_q, n_new] or null (causal).
void attention(const AttentionArgs& a, const float* q, const float* k, const float* v, const uint8_t* mask, float* o,
               ThreadPool& pool);

}  // namespace eyas::cpu
