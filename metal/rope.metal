// Rotary position embedding over x[T, H, D]: NeoX rotates (i, i + rot/2), interleaved rotates
// (2i, 2i + 1); dims [rot_dim, D) pass through. One threadgroup per (head, token). cos and sin
// come from the host (csrc/core/rope_angles.h: evaluated in double, as the CPU op), so the
// rotation's bits equal the CPU's.
#include <metal_stdlib>
#include "common.h"
#include "kernel_args.h"
using namespace metal;

kernel void rope_f32(constant RopeArgs& a [[buffer(0)]],
                     device const float* x [[buffer(1)]],   // [T, H, D]
                     device const float* cs [[buffer(2)]],  // [T, rot_dim / 2, 2]: (cos, sin) per pair
                     device float* y [[buffer(3)]],         // [T, H, D], may alias x
                     uint2 g [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint ntg [[threads_per_threadgroup]]) {
  const uint h = g.x, t = g.y;
  if (h >= uint(a.heads) || t >= uint(a.tokens)) return;  // no barriers in this kernel
  const ulong base = (ulong(t) * a.heads + h) * a.head_dim;
  const int half_rot = a.rot_dim / 2;
  const device float* row_cs = cs + ulong(t) * a.rot_dim;
  for (int i = int(tid); i < half_rot; i += int(ntg)) {
    const float c = row_cs[2 * i], s = row_cs[2 * i + 1];
    const int i0 = a.style == 0 ? i : 2 * i;
    const int i1 = a.style == 0 ? i + half_rot : 2 * i + 1;
    const float x0 = x[base + i0], x1 = x[base + i1];
    y[base + i0] = x0 * c - x1 * s;
    y[base + i1] = x1 * c + x0 * s;
  }
  for (int i = a.rot_dim + int(tid); i < a.head_dim; i += int(ntg)) y[base + i] = x[base + i];
}
