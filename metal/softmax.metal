// Row softmax / log-softmax of z = (x - max x) / temperature (as the CPU op), argmax and top-k.
// One threadgroup per row; each thread scans a fixed strided subset and partials combine in a
// fixed order, so a row's bits depend only on the threadgroup size (batch invariance).
#include <metal_stdlib>
#include "common.h"
#include "kernel_args.h"
using namespace metal;

kernel void softmax_f32(constant SoftmaxArgs& a [[buffer(0)]],
                        device const float* x [[buffer(1)]],  // [rows, cols]
                        device float* y [[buffer(2)]],        // [rows, cols]
                        uint row [[threadgroup_position_in_grid]],
                        uint tid [[thread_index_in_threadgroup]],
                        uint ntg [[threads_per_threadgroup]],
                        uint sgitg [[simdgroup_index_in_threadgroup]],
                        uint tiisg [[thread_index_in_simdgroup]]) {
  threadgroup float scratch[EYAS_MAX_TG / EYAS_SIMD];
  const uint nsg = (ntg + EYAS_SIMD - 1) / EYAS_SIMD;
  const bool live = row < uint(a.rows);
  const device float* xr = x + ulong(row) * a.cols;
  device float* yr = y + ulong(row) * a.cols;
  float m = -INFINITY;
  if (live)
    for (int i = int(tid); i < a.cols; i += int(ntg)) m = max(m, xr[i]);
  m = tg_max(m, scratch, sgitg, tiisg, nsg);
  float s = 0.0f;
  if (live)
    for (int i = int(tid); i < a.cols; i += int(ntg)) s += eyas_exp((xr[i] - m) / a.temperature);
  s = tg_sum(s, scratch, sgitg, tiisg, nsg);
  if (!live) return;  // after the last barrier
  if (a.log) {
    const float ls = log(s);
    for (int i = int(tid); i < a.cols; i += int(ntg)) yr[i] = (xr[i] - m) / a.temperature - ls;
  } else {
    for (int i = int(tid); i < a.cols; i += int(ntg)) yr[i] = eyas_exp((xr[i] - m) / a.temperature) / s;
  }
}

// (value, index) order of top-k: larger value first, ties to the lower index.
inline bool ranks_before(float v, int i, float bv, int bi) { return v > bv || (v == bv && i < bi); }

// Best (value, index) of the threadgroup among elements ranked strictly after (lv, li).
inline void tg_best_after(const device float* xr, int cols, float lv, int li, bool first, uint tid, uint ntg,
                          uint sgitg, uint tiisg, uint nsg, threadgroup float* sv, threadgroup int* si,
                          thread float& bv, thread int& bi) {
  bv = -INFINITY;
  bi = 0x7fffffff;
  for (int i = int(tid); i < cols; i += int(ntg)) {
    const float v = xr[i];
    if (!first && !ranks_before(lv, li, v, i)) continue;
    if (ranks_before(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  for (ushort off = 16; off > 0; off /= 2) {
    const float ov = simd_shuffle_down(bv, off);
    const int oi = simd_shuffle_down(bi, off);
    if (tiisg + off < EYAS_SIMD && ranks_before(ov, oi, bv, bi)) {
      bv = ov;
      bi = oi;
    }
  }
  if (tiisg == 0) {
    sv[sgitg] = bv;
    si[sgitg] = bi;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  bv = sv[0];
  bi = si[0];
  for (uint k = 1; k < nsg; ++k)
    if (ranks_before(sv[k], si[k], bv, bi)) {
      bv = sv[k];
      bi = si[k];
    }
  threadgroup_barrier(mem_flags::mem_threadgroup);
}

kernel void argmax_f32(constant TopkArgs& a [[buffer(0)]],
                       device const float* x [[buffer(1)]],  // [rows, cols]
                       device int* idx [[buffer(2)]],        // [rows]
                       uint row [[threadgroup_position_in_grid]],
                       uint tid [[thread_index_in_threadgroup]],
                       uint ntg [[threads_per_threadgroup]],
                       uint sgitg [[simdgroup_index_in_threadgroup]],
                       uint tiisg [[thread_index_in_simdgroup]]) {
  threadgroup float sv[EYAS_MAX_TG / EYAS_SIMD];
  threadgroup int si[EYAS_MAX_TG / EYAS_SIMD];
  const uint nsg = (ntg + EYAS_SIMD - 1) / EYAS_SIMD;
  const int cols = row < uint(a.rows) ? a.cols : 0;
  float bv;
  int bi;
  tg_best_after(x + ulong(row) * a.cols, cols, 0.0f, 0, true, tid, ntg, sgitg, tiisg, nsg, sv, si, bv, bi);
  if (tid == 0 && row < uint(a.rows)) idx[row] = bi;
}

// k rounds of "best element ranked after the previous pick": O(k * cols / threads), exact order.
kernel void topk_f32(constant TopkArgs& a [[buffer(0)]],
                     device const float* x [[buffer(1)]],  // [rows, cols]
                     device float* values [[buffer(2)]],   // [rows, k]
                     device int* idx [[buffer(3)]],        // [rows, k]
                     uint row [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint ntg [[threads_per_threadgroup]],
                     uint sgitg [[simdgroup_index_in_threadgroup]],
                     uint tiisg [[thread_index_in_simdgroup]]) {
  threadgroup float sv[EYAS_MAX_TG / EYAS_SIMD];
  threadgroup int si[EYAS_MAX_TG / EYAS_SIMD];
  const uint nsg = (ntg + EYAS_SIMD - 1) / EYAS_SIMD;
  const bool live = row < uint(a.rows);
  const int cols = live ? a.cols : 0;
  const device float* xr = x + ulong(row) * a.cols;
  float lv = 0.0f;
  int li = 0;
  for (int j = 0; j < a.k; ++j) {
    tg_best_after(xr, cols, lv, li, j == 0, tid, ntg, sgitg, tiisg, nsg, sv, si, lv, li);
    if (tid == 0 && live) {
      values[ulong(row) * a.k + j] = lv;
      idx[ulong(row) * a.k + j] = li;
    }
  }
}
