// KV cache copies on a slot-major cache [Hkv, capacity, D].
// kv_write: row t of kv_new[T, Hkv, D] goes to slot dst_start + t of every head.
// kv_move_rows: slot src[i] moves to slot dst_start + i "as if all sources were read first";
// one threadgroup owns a 32-wide column strip of one head for every moved slot, reads all its
// sources into threadgroup memory, then writes: overlapping moves are safe with no second pass.
#include <metal_stdlib>
#include "common.h"
#include "kernel_args.h"
using namespace metal;

// C: the cache element; a float row is rounded to nearest even when C is half.
template <typename C>
kernel void kv_write(constant KvCopyArgs& a [[buffer(0)]],
                     device const float* src [[buffer(1)]],  // [T, Hkv, D]
                     device C* cache [[buffer(2)]],          // [Hkv, capacity, D]
                     uint3 gid [[thread_position_in_grid]]) {
  const uint d = gid.x, h = gid.y, t = gid.z;
  if (d >= uint(a.head_dim) || h >= uint(a.n_kv_heads) || t >= uint(a.rows)) return;
  cache[(ulong(h) * a.capacity + a.dst_start + t) * a.head_dim + d] = C(src[(ulong(t) * a.n_kv_heads + h) * a.head_dim + d]);
}

// Threadgroup (strip, head), 32 x R threads; stage holds rows x 32 elements (host: rows*128 bytes).
template <typename C>
kernel void kv_move_rows(constant KvCopyArgs& a [[buffer(0)]],
                         device const int* src_slots [[buffer(1)]],  // [rows]
                         device C* cache [[buffer(2)]],              // [Hkv, capacity, D]
                         threadgroup C* stage [[threadgroup(0)]],
                         uint2 g [[threadgroup_position_in_grid]],
                         uint2 lt [[thread_position_in_threadgroup]],
                         uint2 ntg [[threads_per_threadgroup]]) {
  const uint d = g.x * 32 + lt.x, h = g.y;
  const bool live = d < uint(a.head_dim) && lt.x < 32;
  device C* head = cache + ulong(h) * a.capacity * a.head_dim;
  for (uint r = lt.y; r < uint(a.rows); r += ntg.y)
    if (live) stage[r * 32 + lt.x] = head[ulong(src_slots[r]) * a.head_dim + d];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint r = lt.y; r < uint(a.rows); r += ntg.y)
    if (live) head[ulong(a.dst_start + r) * a.head_dim + d] = stage[r * 32 + lt.x];
}

template [[host_name("kv_write_f32")]] kernel decltype(kv_write<float>) kv_write<float>;
template [[host_name("kv_write_f16")]] kernel decltype(kv_write<half>) kv_write<half>;
template [[host_name("kv_move_rows_f32")]] kernel decltype(kv_move_rows<float>) kv_move_rows<float>;
template [[host_name("kv_move_rows_f16")]] kernel decltype(kv_move_rows<half>) kv_move_rows<half>;
