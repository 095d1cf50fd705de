// MSL-only helpers shared by the kernels: threadgroup reductions with a fixed combine order
// and the GGML quantized block layouts. Kept inside the emulated MSL subset (docs/metal.md).
#pragma once
#include <metal_stdlib>
using namespace metal;

#define EYAS_SIMD 32
// Threads per threadgroup the host uses for row-reduction kernels; kernels accept any
// multiple of 32 up to EYAS_MAX_TG, and a row's result depends only on this value.
#define EYAS_ROW_TG 256
#define EYAS_MAX_TG 1024

// Sum of v over the threadgroup: simd_sum per simdgroup, then every thread adds the partials
// in simdgroup order, so all threads get the same bits. `scratch` holds EYAS_MAX_TG/32 floats.
inline float tg_sum(float v, threadgroup float* scratch, uint sgitg, uint tiisg, uint nsg) {
  v = simd_sum(v);
  if (tiisg == 0) scratch[sgitg] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float r = 0.0f;
  for (uint i = 0; i < nsg; ++i) r += scratch[i];
  threadgroup_barrier(mem_flags::mem_threadgroup);  // scratch is reused by the next call
  return r;
}

inline float tg_max(float v, threadgroup float* scratch, uint sgitg, uint tiisg, uint nsg) {
  v = simd_max(v);
  if (tiisg == 0) scratch[sgitg] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float r = scratch[0];
  for (uint i = 1; i < nsg; ++i) r = max(r, scratch[i]);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return r;
}

// --- GGML block layouts (byte-compatible with the GGUF file data) ------------------------
#define QK 32
#define QK_K 256

struct block_q8_0 {
  half d;
  char qs[QK];
};
struct block_q4_0 {
  half d;
  uchar qs[QK / 2];
};
struct block_q4_1 {
  half d;
  half m;
  uchar qs[QK / 2];
};
struct block_q5_0 {
  half d;
  uchar qh[4];
  uchar qs[QK / 2];
};
struct block_q5_1 {
  half d;
  half m;
  uchar qh[4];
  uchar qs[QK / 2];
};
struct block_q4_K {
  half d;
  half dmin;
  uchar scales[12];
  uchar qs[QK_K / 2];
};
struct block_q5_K {
  half d;
  half dmin;
  uchar scales[12];
  uchar qh[QK_K / 8];
  uchar qs[QK_K / 2];
};
struct block_q6_K {
  uchar ql[QK_K / 2];
  uchar qh[QK_K / 4];
  char scales[QK_K / 16];
  half d;
};

// 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K super-block.
inline uchar2 kquant_scale_min(const device uchar* s, int j) {
  if (j < 4) return uchar2(uchar(s[j] & 63), uchar(s[j + 4] & 63));
  return uchar2(uchar((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4)), uchar((s[j + 4] >> 4) | ((s[j] >> 6) << 4)));
}

// exp with the CPU kernels' exact operations (csrc/cpu/softmax_exp.h: Cephes-style range
// reduction + degree-5 polynomial, fma where the CPU uses fma), so softmax/attention bits match.
inline float eyas_exp(float x) {
  if (x != x) return x;
  if (x > 88.0f) return INFINITY;
  if (x < -87.33654475f) return 0.0f;
  const float n = rint(x * 1.44269504088896341f);
  float r = fma(n, -0.693359375f, x);
  r = fma(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = fma(p, r, 1.3981999507e-3f);
  p = fma(p, r, 8.3334519073e-3f);
  p = fma(p, r, 4.1665795894e-2f);
  p = fma(p, r, 1.6666665459e-1f);
  p = fma(p, r, 5.0000001201e-1f);
  const float r2 = r * r;
  float e = fma(p, r2, r);
  e = e + 1.0f;
  return e * as_type<float>((int(n) + 127) << 23);
}

// Sum of 16 partial lanes held by lanes 16g..16g+15 of a simdgroup, folded as
// lanes[l] += lanes[l + s] for s = 8, 4, 2, 1 (the CPU's fold16); valid in lane 16g.
inline float fold16_simd(float v) {
  v = v + simd_shuffle_down(v, 8);
  v = v + simd_shuffle_down(v, 4);
  v = v + simd_shuffle_down(v, 2);
  v = v + simd_shuffle_down(v, 1);
  return v;
}

// bf16 bits -> float without relying on the bfloat type (Metal 3.1+).
inline float bf16_to_float(ushort u) { return as_type<float>(uint(u) << 16); }
