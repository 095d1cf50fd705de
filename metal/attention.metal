// Tree / causal attention over a slot-major KV cache [Hkv, capacity, D] (docs/kv_cache.md).
// One threadgroup per (head, query) with a multiple of 32 threads (each owns up to DMAX / 32
// output dims). Visible keys, in order: the prefix [0, prefix_len), then
// the new slots the query sees (mask row, or j <= self when causal). The reduction is the CPU
// kernel's, step for step (csrc/cpu/attention.cpp), so a query's bits equal a decode over the
// same keys laid out contiguously:
//   s[p] = fold16(16 fma lanes of q.k) * scale;  m = max s;  e[p] = exp(s[p] - m)
//   l = fold16(e[p] summed into lane p % 16);  o = (sum_even_p e v + sum_odd_p e v) / l
// Scores are recomputed in the second pass rather than stored, so no scratch buffer is needed.
#include <metal_stdlib>
#include "common.h"
#include "kernel_args.h"
using namespace metal;

#define EYAS_ATTN_MAX_NEW 2048  // masked mode: new slots per call (the visible list is staged)

// Visible key p -> cache slot.
inline int visible_slot(constant AttentionArgs& a, int p, threadgroup const int* list) {
  if (p < a.prefix_len) return p;
  return a.causal ? p : a.prefix_len + list[p - a.prefix_len];
}

// Score of visible key p, computed by the 16-lane group that owns it (valid in its lane 0). KV is
// the cache element (float, or half converted exactly, as the CPU kernel reads an F16 cache).
template <typename KV>
inline float score(constant AttentionArgs& a, const device float* qr, const device KV* kh,
                   threadgroup const int* list, int p, int n, uint l16) {
  float acc = 0.0f;
  if (p < n) {
    const device KV* kr = kh + ulong(visible_slot(a, p, list)) * a.head_dim;
    for (int c = 0; c < a.head_dim; c += 16) acc = fma(qr[c + l16], float(kr[c + l16]), acc);
  }
  return fold16_simd(acc) * a.scale;
}

// DMAX bounds the per-thread accumulators; head_dim is any multiple of 16 up to DMAX.
template <typename KV, int DMAX>
kernel void attention_kv(constant AttentionArgs& a [[buffer(0)]],
                         device const float* q [[buffer(1)]],     // [Tq, Hq, D]
                         device const KV* kc [[buffer(2)]],       // [Hkv, capacity, D]
                         device const KV* vc [[buffer(3)]],       // [Hkv, capacity, D]
                         device const uchar* mask [[buffer(4)]],  // [Tq, Tn] (unused when causal)
                         device float* o [[buffer(5)]],           // [Tq, Hq, D]
                         uint2 g [[threadgroup_position_in_grid]],
                         uint tid [[thread_index_in_threadgroup]],
                         uint ntg [[threads_per_threadgroup]],
                         uint tiisg [[thread_index_in_simdgroup]]) {
  threadgroup int list[EYAS_ATTN_MAX_NEW];
  threadgroup float sc[EYAS_MAX_TG / 16];  // one score / weight per 16-lane group
  threadgroup float lanes[16];
  threadgroup int nvis[1];
  const int D = a.head_dim;
  const uint h = g.x, i = g.y;
  const bool live = h < uint(a.n_heads) && i < uint(a.n_q);
  const int self = a.n_new - a.n_q + int(i);
  if (tid == 0) {
    int n = a.prefix_len;
    if (live && a.causal) n += self + 1;
    if (live && !a.causal)
      for (int j = 0; j < a.n_new; ++j)
        if (mask[ulong(i) * a.n_new + j] != 0) list[n++ - a.prefix_len] = j;
    nvis[0] = live ? n : 0;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const int n = nvis[0];
  const ulong kv_off = ulong(h / uint(a.n_heads / a.n_kv_heads)) * a.capacity * D;
  const device float* qr = q + (ulong(i) * a.n_heads + h) * D;
  const uint grp = tid / 16, l16 = tid % 16, ngrp = ntg / 16;


  // Pass 1: the maximum score (exact whatever the order).
  float m = -INFINITY;
  for (int p0 = 0; p0 < n; p0 += int(ngrp)) {
    const float s = score(a, qr, kc + kv_off, list, p0 + int(grp), n, l16);
    if (l16 == 0 && p0 + int(grp) < n) sc[grp] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int k = 0; k < int(ngrp) && p0 + k < n; ++k) m = max(m, sc[k]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }

  // Pass 2: weights in key order; thread d < D owns output dim d, threads < 16 own sum lanes.
  float acc0[DMAX / 32], acc1[DMAX / 32];
  for (int j = 0; j < DMAX / 32; ++j) acc0[j] = acc1[j] = 0.0f;
  float lsum = 0.0f;
  for (int p0 = 0; p0 < n; p0 += int(ngrp)) {
    const float s = score(a, qr, kc + kv_off, list, p0 + int(grp), n, l16);
    if (l16 == 0 && p0 + int(grp) < n) sc[grp] = eyas_exp(s - m);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int k = 0; k < int(ngrp) && p0 + k < n; ++k) {
      const int p = p0 + k;
      const float e = sc[k];
      if (int(tid) == (p & 15)) lsum += e;
      const device KV* vr = vc + kv_off + ulong(visible_slot(a, p, list)) * D;
      for (int j = 0; int(tid) + j * int(ntg) < D; ++j) {
        const int d = int(tid) + j * int(ntg);
        if (p & 1) acc1[j] = fma(e, float(vr[d]), acc1[j]);
        else acc0[j] = fma(e, float(vr[d]), acc0[j]);
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid < 16) lanes[tid] = lsum;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (!live) return;
  float f[16];
  for (int k = 0; k < 16; ++k) f[k] = lanes[k];
  for (int s = 8; s >= 1; s /= 2)
    for (int k = 0; k < s; ++k) f[k] += f[k + s];
  device float* out = o + (ulong(i) * a.n_heads + h) * D;
  for (int j = 0; int(tid) + j * int(ntg) < D; ++j) {
    const int d = int(tid) + j * int(ntg);
    out[d] = n == 0 ? 0.0f : (acc0[j] + acc1[j]) / f[0];
  }
}

template [[host_name("attention_f32_d64")]] kernel decltype(attention_kv<float, 64>) attention_kv<float, 64>;
template [[host_name("attention_f32_d128")]] kernel decltype(attention_kv<float, 128>) attention_kv<float, 128>;
template [[host_name("attention_f32_d256")]] kernel decltype(attention_kv<float, 256>) attention_kv<float, 256>;
template [[host_name("attention_f16_d64")]] kernel decltype(attention_kv<half, 64>) attention_kv<half, 64>;
template [[host_name("attention_f16_d128")]] kernel decltype(attention_kv<half, 128>) attention_kv<half, 128>;
template [[host_name("attention_f16_d256")]] kernel decltype(attention_kv<half, 256>) attention_kv<half, 256>;
