// Elementwise ops over [rows, cols] as one flat range: add (optionally broadcasting one row of
// b), silu(gate) * up, x * sigmoid(g), x * s. One thread per element; no reductions.
#include <metal_stdlib>
#include "common.h"
#include "kernel_args.h"
using namespace metal;

kernel void add_f32(constant ElementwiseArgs& a [[buffer(0)]],
                    device const float* x [[buffer(1)]],  // [rows, cols]
                    device const float* b [[buffer(2)]],  // [rows, cols] or [cols] when broadcast
                    device float* y [[buffer(3)]],        // [rows, cols]
                    uint i [[thread_position_in_grid]]) {
  const ulong n = ulong(a.rows) * a.cols;
  if (i >= n) return;
  y[i] = x[i] + b[a.broadcast ? i % uint(a.cols) : i];
}

kernel void silu_mul_f32(constant ElementwiseArgs& a [[buffer(0)]],
                         device const float* gate [[buffer(1)]],  // [rows, cols], rows in_stride apart if set
                         device const float* up [[buffer(2)]],    // [rows, cols], rows in_stride apart if set
                         device float* y [[buffer(3)]],           // [rows, cols]
                         uint i [[thread_position_in_grid]]) {
  if (i >= ulong(a.rows) * a.cols) return;
  // in_stride: the inputs' rows lie that far apart (the halves of fused gate|up rows)
  const ulong j = a.in_stride ? ulong(i / uint(a.cols)) * uint(a.in_stride) + i % uint(a.cols) : ulong(i);
  const float g = gate[j];
  y[i] = g / (1.0f + eyas_exp(-g)) * up[j];
}

kernel void sigmoid_mul_f32(constant ElementwiseArgs& a [[buffer(0)]],
                            device const float* x [[buffer(1)]],  // [rows, cols]
                            device const float* g [[buffer(2)]],  // [rows, cols]
                            device float* y [[buffer(3)]],        // [rows, cols]
                            uint i [[thread_position_in_grid]]) {
  if (i >= ulong(a.rows) * a.cols) return;
  y[i] = x[i] / (1.0f + eyas_exp(-g[i]));
}

kernel void scale_f32(constant ElementwiseArgs& a [[buffer(0)]],
                      device const float* x [[buffer(1)]],  // [rows, cols]
                      device float* y [[buffer(2)]],        // [rows, cols]
                      uint i [[thread_position_in_grid]]) {
  if (i >= ulong(a.rows) * a.cols) return;
  y[i] = x[i] * a.s;
}
