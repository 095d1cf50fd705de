// Tree attention CPU kernel (layout and semantics: csrc/ops/attention.h, docs/kv_cache.md).
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// q, o: F32[n_q, n_heads, D]; k, v: [n_kv_heads, capacity, D] of F32, or F16 (uint16_t) when kv_f16;
// mask: [n_q, n_new] or null (causal).
void attention(const AttentionArgs& a, const float* q, const void* k, const void* v, bool kv_f16, const uint8_t* mask,
               float* o, ThreadPool& pool);

}  // namespace eyas::cpu
