// KV cache row copies: append new rows, and compact an accepted tree path (docs/kv_cache.md).
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// src: [rows, n_kv_heads, D] -> cache: [n_kv_heads, capacity, D] slots [dst_start, dst_start + rows).
void kv_write(const KvCopyArgs& a, const float* src, float* cache, ThreadPool& pool);
// cache slot src_slots[i] -> slot dst_start + i for i < rows, in every head, as if all were read first.
void kv_move_rows(const KvCopyArgs& a, const int32_t* src_slots, float* cache, ThreadPool& pool);

}  // namespace eyas::cpu
