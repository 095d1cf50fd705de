// y[T, N] = x[T, K] . w[N, K]^T for every GGUF weight type, with the CPU kernels' exact
// arithmetic (csrc/cpu/quant/dot_generic.h):
//   quantized: x is first quantized to Q8 per block (quantize_q8_32 / quantize_q8_256), each
//     block's dot is an exact integer, and the block terms p_b are added in block order;
//   float: 16 lanes, lane[k % 16] = fma(x[k], w[k], lane[k % 16]) in k order, folded 8, 4, 2, 1.
// Two variants per type share that per-element arithmetic, so a row's bits never depend on T:
//   *_vec (T small): one simdgroup per output column; lanes compute block terms in parallel,
//     lane 0 adds them in block order (float: two columns per simdgroup, 16 lanes each).
//   *_mat (T > 1): one thread per output element, a sequential loop over blocks.
#include <metal_stdlib>
#include "common.h"
#include "kernel_args.h"
#include "quant.h"
using namespace metal;

// ---- activation quantization (quant_rows32 / quant_rows256) ------------------------------

inline char q8_round(float x, float id, thread int& qi) {
  float v = x * id;
  v = v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v);
  qi = int(rint(v));  // ties to even, as the CPU
  return char(qi);
}

// Grid (K/32, T), 32 threads: one simdgroup per block.
kernel void quantize_q8_32(constant MatmulArgs& a [[buffer(0)]],
                           device const float* x [[buffer(1)]],  // [T, K]
                           device char* xq [[buffer(2)]],        // [T, K]
                           device float* xd [[buffer(3)]],       // [T, K/32]
                           device int* xs [[buffer(4)]],         // [T, K/32]
                           uint2 g [[threadgroup_position_in_grid]],
                           uint lane [[thread_index_in_simdgroup]]) {
  const uint b = g.x, t = g.y, nb = uint(a.k) / 32;
  const ulong e = ulong(t) * a.k + b * 32 + lane;
  const float v = x[e];
  const float amax = simd_max(v < 0 ? -v : v);
  const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  int qi;
  xq[e] = q8_round(v, id, qi);
  const int s = simd_sum(qi);  // integers: exact in any order
  if (lane == 0) {
    xd[ulong(t) * nb + b] = d;
    xs[ulong(t) * nb + b] = s;
  }
}

// Grid (K/256, T), 256 threads: sums per 16-group for the K-quant mins.
kernel void quantize_q8_256(constant MatmulArgs& a [[buffer(0)]],
                            device const float* x [[buffer(1)]],  // [T, K]
                            device char* xq [[buffer(2)]],        // [T, K]
                            device float* xd [[buffer(3)]],       // [T, K/256]
                            device int* xs [[buffer(4)]],         // [T, K/16]
                            uint2 g [[threadgroup_position_in_grid]],
                            uint tid [[thread_index_in_threadgroup]],
                            uint sgitg [[simdgroup_index_in_threadgroup]],
                            uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float scratch[EYAS_MAX_TG / EYAS_SIMD];
  const uint b = g.x, t = g.y;
  const ulong e = ulong(t) * a.k + b * 256 + tid;
  const float v = x[e];
  const float amax = tg_max(v < 0 ? -v : v, scratch, sgitg, lane, 8);
  const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  int qi;
  xq[e] = q8_round(v, id, qi);
  int s = qi;
  s += simd_shuffle_down(s, 8);
  s += simd_shuffle_down(s, 4);
  s += simd_shuffle_down(s, 2);
  s += simd_shuffle_down(s, 1);
  if (lane % 16 == 0) xs[ulong(t) * (a.k / 16) + b * 16 + tid / 16] = s;
  if (tid == 0) xd[ulong(t) * (a.k / 256) + b] = d;
}

// ---- quantized weights ------------------------------------------------------------------

// Grid (ceil(N / simdgroups), T); simdgroup s of group x computes column x * nsg + s of row t.
template <typename Q, int BE>
kernel void matmul_q_vec(constant MatmulArgs& a [[buffer(0)]],
                         device const uchar* w [[buffer(1)]],  // [N] rows of K / BE blocks
                         device const char* xq [[buffer(2)]],  // [T, K]
                         device const float* xd [[buffer(3)]], // [T, K / BE]
                         device const int* xs [[buffer(4)]],   // [T, K / 32] or [T, K / 16]
                         device float* y [[buffer(5)]],        // [T, N]
                         uint2 g [[threadgroup_position_in_grid]],
                         uint sgitg [[simdgroup_index_in_threadgroup]],
                         uint nsg [[simdgroups_per_threadgroup]],
                         uint lane [[thread_index_in_simdgroup]]) {
  threadgroup BlockTerms part[EYAS_MAX_TG];
  const uint n = g.x * nsg + sgitg, t = g.y;
  const int nb = a.k / BE, spb = BE == 256 ? 16 : 1;
  const bool live = n < uint(a.n) && t < uint(a.rows);
  const device Q* wr = (const device Q*)(w + ulong(n) * nb * sizeof(Q));
  float acc = 0.0f;
  for (int b0 = 0; b0 < nb; b0 += EYAS_SIMD) {
    const int b = b0 + int(lane);
    if (live && b < nb)
      part[sgitg * EYAS_SIMD + lane] =
          block_t(wr[b], xq + ulong(t) * a.k + b * BE, xd[ulong(t) * nb + b], xs + ulong(t) * nb * spb + b * spb);
    simdgroup_barrier(mem_flags::mem_threadgroup);
    if (lane == 0 && live)
      for (int j = 0; j < EYAS_SIMD && b0 + j < nb; ++j) acc = block_step(wr[0], acc, part[sgitg * EYAS_SIMD + j]);
    simdgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lane == 0 && live) y[ulong(t) * a.n + n] = acc;
}

// Grid (ceil(N / tg.x), ceil(T / tg.y)); one thread per output element.
template <typename Q, int BE>
kernel void matmul_q_mat(constant MatmulArgs& a [[buffer(0)]],
                         device const uchar* w [[buffer(1)]],  // [N] rows of K / BE blocks
                         device const char* xq [[buffer(2)]],  // [T, K]
                         device const float* xd [[buffer(3)]], // [T, K / BE]
                         device const int* xs [[buffer(4)]],   // [T, K / 32] or [T, K / 16]
                         device float* y [[buffer(5)]],        // [T, N]
                         uint2 pos [[thread_position_in_grid]]) {
  const uint n = pos.x, t = pos.y;
  if (n >= uint(a.n) || t >= uint(a.rows)) return;
  const int nb = a.k / BE, spb = BE == 256 ? 16 : 1;
  const device Q* wr = (const device Q*)(w + ulong(n) * nb * sizeof(Q));
  float acc = 0.0f;
  for (int b = 0; b < nb; ++b)
    acc = block_step(wr[b], acc, block_t(wr[b], xq + ulong(t) * a.k + b * BE, xd[ulong(t) * nb + b], xs + ulong(t) * nb * spb + b * spb));
  y[ulong(t) * a.n + n] = acc;
}

// ---- float weights ----------------------------------------------------------------------


// Grid (ceil(N / (2 * simdgroups)), T); each 16-lane half of a simdgroup owns one column.
template <typename W>
kernel void matmul_f_vec(constant MatmulArgs& a [[buffer(0)]],
                         device const W* w [[buffer(1)]],      // [N, K]
                         device const float* x [[buffer(2)]],  // [T, K]
                         device float* y [[buffer(3)]],        // [T, N]
                         uint2 g [[threadgroup_position_in_grid]],
                         uint sgitg [[simdgroup_index_in_threadgroup]],
                         uint nsg [[simdgroups_per_threadgroup]],
                         uint lane [[thread_index_in_simdgroup]]) {
  const uint n = (g.x * nsg + sgitg) * 2 + lane / 16, t = g.y, l = lane % 16;
  const bool live = n < uint(a.n) && t < uint(a.rows);
  float acc = 0.0f;
  if (live) {
    const device float* xr = x + ulong(t) * a.k;
    const ulong wr = ulong(n) * a.k;
    for (int i = int(l); i < a.k; i += 16) acc = fma(xr[i], wload(w, wr + i), acc);
  }
  acc = fold16_simd(acc);
  if (l == 0 && live) y[ulong(t) * a.n + n] = acc;
}

template <typename W>
kernel void matmul_f_mat(constant MatmulArgs& a [[buffer(0)]],
                         device const W* w [[buffer(1)]],      // [N, K]
                         device const float* x [[buffer(2)]],  // [T, K]
                         device float* y [[buffer(3)]],        // [T, N]
                         uint2 pos [[thread_position_in_grid]]) {
  const uint n = pos.x, t = pos.y;
  if (n >= uint(a.n) || t >= uint(a.rows)) return;
  const device float* xr = x + ulong(t) * a.k;
  const ulong wr = ulong(n) * a.k;
  float lanes[16];
  for (int l = 0; l < 16; ++l) lanes[l] = 0.0f;
  for (int i = 0; i < a.k; ++i) lanes[i & 15] = fma(xr[i], wload(w, wr + i), lanes[i & 15]);
  for (int s = 8; s >= 1; s /= 2)
    for (int l = 0; l < s; ++l) lanes[l] = lanes[l] + lanes[l + s];
  y[ulong(t) * a.n + n] = lanes[0];
}

template [[host_name("matmul_f32_vec")]] kernel decltype(matmul_f_vec<float>) matmul_f_vec<float>;
template [[host_name("matmul_f16_vec")]] kernel decltype(matmul_f_vec<half>) matmul_f_vec<half>;
template [[host_name("matmul_bf16_vec")]] kernel decltype(matmul_f_vec<ushort>) matmul_f_vec<ushort>;
template [[host_name("matmul_f32_mat")]] kernel decltype(matmul_f_mat<float>) matmul_f_mat<float>;
template [[host_name("matmul_f16_mat")]] kernel decltype(matmul_f_mat<half>) matmul_f_mat<half>;
template [[host_name("matmul_bf16_mat")]] kernel decltype(matmul_f_mat<ushort>) matmul_f_mat<ushort>;
template [[host_name("matmul_q8_0_vec")]] kernel decltype(matmul_q_vec<block_q8_0, 32>) matmul_q_vec<block_q8_0, 32>;
template [[host_name("matmul_q4_0_vec")]] kernel decltype(matmul_q_vec<block_q4_0, 32>) matmul_q_vec<block_q4_0, 32>;
template [[host_name("matmul_q4_1_vec")]] kernel decltype(matmul_q_vec<block_q4_1, 32>) matmul_q_vec<block_q4_1, 32>;
template [[host_name("matmul_q5_0_vec")]] kernel decltype(matmul_q_vec<block_q5_0, 32>) matmul_q_vec<block_q5_0, 32>;
template [[host_name("matmul_q5_1_vec")]] kernel decltype(matmul_q_vec<block_q5_1, 32>) matmul_q_vec<block_q5_1, 32>;
template [[host_name("matmul_q4_K_vec")]] kernel decltype(matmul_q_vec<block_q4_K, 256>) matmul_q_vec<block_q4_K, 256>;
template [[host_name("matmul_q5_K_vec")]] kernel decltype(matmul_q_vec<block_q5_K, 256>) matmul_q_vec<block_q5_K, 256>;
template [[host_name("matmul_q6_K_vec")]] kernel decltype(matmul_q_vec<block_q6_K, 256>) matmul_q_vec<block_q6_K, 256>;
template [[host_name("matmul_q8_0_mat")]] kernel decltype(matmul_q_mat<block_q8_0, 32>) matmul_q_mat<block_q8_0, 32>;
template [[host_name("matmul_q4_0_mat")]] kernel decltype(matmul_q_mat<block_q4_0, 32>) matmul_q_mat<block_q4_0, 32>;
template [[host_name("matmul_q4_1_mat")]] kernel decltype(matmul_q_mat<block_q4_1, 32>) matmul_q_mat<block_q4_1, 32>;
template [[host_name("matmul_q5_0_mat")]] kernel decltype(matmul_q_mat<block_q5_0, 32>) matmul_q_mat<block_q5_0, 32>;
template [[host_name("matmul_q5_1_mat")]] kernel decltype(matmul_q_mat<block_q5_1, 32>) matmul_q_mat<block_q5_1, 32>;
template [[host_name("matmul_q4_K_mat")]] kernel decltype(matmul_q_mat<block_q4_K, 256>) matmul_q_mat<block_q4_K, 256>;
template [[host_name("matmul_q5_K_mat")]] kernel decltype(matmul_q_mat<block_q5_K, 256>) matmul_q_mat<block_q5_K, 256>;
template [[host_name("matmul_q6_K_mat")]] kernel decltype(matmul_q_mat<block_q6_K, 256>) matmul_q_mat<block_q6_K, 256>;
