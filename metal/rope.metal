// Rotary position embedding over x[T, H, D]: NeoX rotates (i, i + rot/2), interleaved rotates
// (2i, 2i + 1); dims [rot_dim, D) pass through. One threadgroup per (head, token); the angle
// is pos * inv_freq[i] in float, as the CPU op (any scaling is folded into inv_freq).
#include <metal_stdlib>
#include "common.h"
#include "kernel_args.h"
using namespace metal;

kernel void rope_f32(constant RopeArgs& a [[buffer(0)]],
                     device const float* x [[buffer(1)]],       // [T, H, D]
                     device const int* positions [[buffer(2)]],  // [T]
                     device const float* inv_freq [[buffer(3)]], // [rot_dim / 2]
                     device float* y [[buffer(4)]],              // [T, H, D], may alias x
                     uint2 g [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint ntg [[threads_per_threadgroup]]) {
  const uint h = g.x, t = g.y;
  if (h >= uint(a.heads) || t >= uint(a.tokens)) return;  // no barriers in this kernel
  const ulong base = (ulong(t) * a.heads + h) * a.head_dim;
  const int half_rot = a.rot_dim / 2;
  const float pos = float(positions[t]);
  for (int i = int(tid); i < half_rot; i += int(ntg)) {
    const float ang = pos * inv_freq[i];
    const float c = precise::cos(ang), s = precise::sin(ang);
    const int i0 = a.style == 0 ? i : 2 * i;
    const int i1 = a.style == 0 ? i + half_rot : 2 * i + 1;
    const float x0 = x[base + i0], x1 = x[base + i1];
    y[base + i0] = x0 * c - x1 * s;
    y[base + i1] = x0 * s + x1 * c;
  }
  for (int i = a.rot_dim + int(tid); i < a.head_dim; i += int(ntg)) y[base + i] = x[base + i];
}
