// RMSNorm: y = x / sqrt(mean(x^2) + eps) * w, in the CPU kernel's exact operation order
// (csrc/cpu/rms_norm.cpp): sixteen lanes, lane l summing x[i]^2 for i = l, l + 16, ... in order,
// folded 8/4/2/1; so a row's bits equal the CPU's at any threadgroup size (at least 16 threads)
// and never depend on the number of rows. One threadgroup per row.
#include <metal_stdlib>
#include "common.h"
#include "kernel_args.h"
using namespace metal;

kernel void rms_norm_f32(constant RmsNormArgs& a [[buffer(0)]],
                         device const float* x [[buffer(1)]],  // [rows, dim]
                         device const float* w [[buffer(2)]],  // [dim]
                         device float* y [[buffer(3)]],        // [rows, dim], may alias x
                         uint row [[threadgroup_position_in_grid]],
                         uint tid [[thread_index_in_threadgroup]],
                         uint ntg [[threads_per_threadgroup]],
                         uint sgitg [[simdgroup_index_in_threadgroup]],
                         uint tiisg [[thread_index_in_simdgroup]]) {
  threadgroup float total[4];
  const bool live = row < uint(a.rows);  // no early return: every thread reaches the barrier
  const device float* xr = x + ulong(row) * a.dim;
  float lane = 0.0f;
  if (live && tid < 16)
    for (int i = int(tid); i < a.dim; i += 16) lane += xr[i] * xr[i];
  if (sgitg == 0) {
    const float sum = fold16_simd(lane);
    if (tiisg == 0) total[0] = sum;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const float scale = 1.0f / sqrt(total[0] / float(a.dim) + a.eps);
  if (live)
    for (int i = int(tid); i < a.dim; i += int(ntg)) y[ulong(row) * a.dim + i] = (xr[i] * scale) * w[i];
}
