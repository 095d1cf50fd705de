// Test-only kernels with deliberate bugs; the emulator must flag each one
// (tests/test_metal_emulator.py). Never shipped: the metallib build only globs metal/*.metal.
#include <metal_stdlib>
#include "common.h"
#include "kernel_args.h"
using namespace metal;

// Threadgroup sum; `reuse_barrier` = false drops the barrier that protects scratch from the
// next call's writes (the classic reduction race).
inline float sum_maybe_racy(float v, threadgroup float* scratch, uint sgitg, uint tiisg, uint nsg, bool reuse_barrier) {
  v = simd_sum(v);
  if (tiisg == 0) scratch[sgitg] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float r = 0.0f;
  for (uint i = 0; i < nsg; ++i) r += scratch[i];
  if (reuse_barrier) threadgroup_barrier(mem_flags::mem_threadgroup);
  return r;
}

// y[row] = (sum x, sum x^2) of one row; `a.eps` != 0 selects the racy version.
kernel void bug_missing_barrier(constant RmsNormArgs& a [[buffer(0)]],
                                device const float* x [[buffer(1)]],  // [rows, dim]
                                device float* y [[buffer(2)]],        // [rows, 2]
                                uint row [[threadgroup_position_in_grid]],
                                uint tid [[thread_index_in_threadgroup]],
                                uint ntg [[threads_per_threadgroup]],
                                uint sgitg [[simdgroup_index_in_threadgroup]],
                                uint tiisg [[thread_index_in_simdgroup]]) {
  threadgroup float scratch[32];
  const uint nsg = ntg / 32;
  const bool racy = a.eps != 0.0f;
  float s = 0.0f, q = 0.0f;
  for (int i = int(tid); i < a.dim; i += int(ntg)) {
    s += x[row * a.dim + i];
    q += x[row * a.dim + i] * x[row * a.dim + i];
  }
  s = sum_maybe_racy(s, scratch, sgitg, tiisg, nsg, !racy);
  q = sum_maybe_racy(q, scratch, sgitg, tiisg, nsg, !racy);
  if (tid == 0) {
    y[row * 2] = s;
    y[row * 2 + 1] = q;
  }
}

kernel void bug_divergent_barrier(device float* y [[buffer(1)]], uint tid [[thread_index_in_threadgroup]]) {
  if (tid < 16) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  } else {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  y[tid] = 1.0f;
}

kernel void bug_return_before_barrier(device float* y [[buffer(1)]], uint tid [[thread_index_in_threadgroup]]) {
  if (tid >= 40) return;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[tid] = 1.0f;
}

kernel void bug_divergent_simd(device float* y [[buffer(1)]], uint lane [[thread_index_in_simdgroup]],
                               uint tid [[thread_index_in_threadgroup]]) {
  float v = 1.0f;
  if (lane < 8) v = simd_sum(v);
  y[tid] = v;
}

// Reads scratch slots that only some threads wrote: the poison (NaN) reaches the output.
kernel void bug_uninit_threadgroup_read(device float* y [[buffer(1)]], uint tid [[thread_index_in_threadgroup]],
                                        uint ntg [[threads_per_threadgroup]]) {
  threadgroup float scratch[64];
  if (tid < 32) scratch[tid] = float(tid);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[tid] = scratch[(tid + 16) % 64];
}

// Off by one: thread n writes y[n + 1] and reads x[n + 1].
kernel void bug_oob(device const float* x [[buffer(1)]], device float* y [[buffer(2)]],
                    uint i [[thread_position_in_grid]]) {
  y[i + 1] = x[i + 1] + 1.0f;
}

kernel void bug_threadgroup_too_big(device float* y [[buffer(1)]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float big[10000];
  big[tid] = 1.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[tid] = big[tid];
}

// Correct kernel using a [[threadgroup(0)]] argument: y = reversed x within each group.
kernel void tg_arg_reverse(device const float* x [[buffer(1)]], device float* y [[buffer(2)]],
                           threadgroup float* buf [[threadgroup(0)]],
                           uint i [[thread_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                           uint ntg [[threads_per_threadgroup]]) {
  buf[tid] = x[i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[i] = buf[ntg - 1 - tid];
}
