// RMSNorm: y = x / sqrt(mean(x^2) + eps) * w. One threadgroup per row; each thread sums a
// fixed strided subset, then tg_sum folds in a fixed order: a row's bits depend only on the
// threadgroup size, never on the number of rows (batch invariance).
#include <metal_stdlib>
#include "common.h"
#include "kernel_args.h"
using namespace metal;

kernel void rms_norm_f32(constant RmsNormArgs& a [[buffer(0)]],
                         device const float* x [[buffer(1)]],  // [rows, dim]
                         device const float* w [[buffer(2)]],  // [dim]
                         device float* y [[buffer(3)]],        // [rows, dim]
                         uint row [[threadgroup_position_in_grid]],
                         uint tid [[thread_index_in_threadgroup]],
                         uint ntg [[threads_per_threadgroup]],
                         uint sgitg [[simdgroup_index_in_threadgroup]],
                         uint tiisg [[thread_index_in_simdgroup]]) {
  threadgroup float scratch[EYAS_MAX_TG / EYAS_SIMD];
  const uint nsg = (ntg + EYAS_SIMD - 1) / EYAS_SIMD;
  const bool live = row < uint(a.rows);  // no early return: every thread reaches the barriers
  const device float* xr = x + ulong(row) * a.dim;
  float acc = 0.0f;
  if (live)
    for (int i = int(tid); i < a.dim; i += int(ntg)) acc += xr[i] * xr[i];
  const float sum = tg_sum(acc, scratch, sgitg, tiisg, nsg);
  const float scale = 1.0f / sqrt(sum / float(a.dim) + a.eps);
  if (live)
    for (int i = int(tid); i < a.dim; i += int(ntg)) y[ulong(row) * a.dim + i] = (xr[i] * scale) * w[i];
}
