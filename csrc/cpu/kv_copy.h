// KV cache row copies: append new rows, and compact an accepted tree path (docs/kv_cache.md).
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// src: [rows, n_kv_heads, D] -> cache: [n_kv_heads, capacity, D] slots [dst_start, dst_start + rows).
// The cache holds F32, or F16 when f16 (each value rounded to nearest even, quant::f2h).
void kv_write(const KvCopyArgs& a, const float* src, void* cache, bool f16, ThreadPool& pool);
// cache slot src_slots[i] -> slot dst_start + i for i < rows, in every head, as if all were read first;
// elem_bytes: 4 (F32) or 2 (F16), rows move byte for byte.
void kv_move_rows(const KvCopyArgs& a, const int32_t* src_slots, void* cache, size_t elem_bytes, ThreadPool& pool);

}  // namespace eyas::cpu
