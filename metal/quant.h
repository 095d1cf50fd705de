// Per-block integer dot products and dequantization of the GGML weight types, with the CPU
// kernels' exact operations (csrc/cpu/quant/dot_generic.h, csrc/cpu/embedding.cpp), so Metal
// and CPU give the same bits. Activations are Q8: qs int8 per element, one float scale dx
// per 32- or 256-block, integer sums xs per 32-block (legacy) or per 16-group (K-quants).
#pragma once
#include "common.h"

inline uint rd_u32(const device uchar* p) { return uint(p[0]) | uint(p[1]) << 8 | uint(p[2]) << 16 | uint(p[3]) << 24; }

// 16 bytes of nibbles against 32 activations (low nibbles: elements 0..15, high: 16..31).
inline int idot_nib(const device uchar* qs, const device char* x) {
  int s = 0;
  for (int j = 0; j < 16; ++j) s += int(qs[j] & 15) * int(x[j]) + int(qs[j] >> 4) * int(x[j + 16]);
  return s;
}
inline int idot_nib5(uint qh, const device uchar* qs, const device char* x) {
  int s = 0;
  for (int j = 0; j < 16; ++j) {
    const int lo = int((qs[j] & 15) | (((qh >> j) & 1) << 4));
    const int hi = int((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
    s += lo * int(x[j]) + hi * int(x[j + 16]);
  }
  return s;
}

// One block's terms, which the caller applies in block order with block_step: legacy types
// acc = fma(f, s, acc), then fma(m, d, acc) for those with a min (Q4_1, Q5_1); K-quants acc = acc + f.
struct BlockTerms {
  float f, s, m, d;
};
inline BlockTerms block_t(const device block_q8_0& b, const device char* x, float dx, const device int* xs) {
  int s = 0;
  for (int j = 0; j < 32; ++j) s += int(b.qs[j]) * int(x[j]);
  return {float(s), float(b.d) * dx, 0.0f, 0.0f};
}
inline BlockTerms block_t(const device block_q4_0& b, const device char* x, float dx, const device int* xs) {
  const int i = idot_nib(b.qs, x) - 8 * xs[0];
  return {float(i), float(b.d) * dx, 0.0f, 0.0f};
}
inline BlockTerms block_t(const device block_q4_1& b, const device char* x, float dx, const device int* xs) {
  const int i = idot_nib(b.qs, x);
  return {float(i), float(b.d) * dx, float(b.m), dx * float(xs[0])};
}
inline BlockTerms block_t(const device block_q5_0& b, const device char* x, float dx, const device int* xs) {
  const int i = idot_nib5(rd_u32(b.qh), b.qs, x) - 16 * xs[0];
  return {float(i), float(b.d) * dx, 0.0f, 0.0f};
}
inline BlockTerms block_t(const device block_q5_1& b, const device char* x, float dx, const device int* xs) {
  const int i = idot_nib5(rd_u32(b.qh), b.qs, x);
  return {float(i), float(b.d) * dx, float(b.m), dx * float(xs[0])};
}
inline float block_step(const device block_q8_0&, float acc, BlockTerms t) { return fma(t.f, t.s, acc); }
inline float block_step(const device block_q4_0&, float acc, BlockTerms t) { return fma(t.f, t.s, acc); }
inline float block_step(const device block_q5_0&, float acc, BlockTerms t) { return fma(t.f, t.s, acc); }
inline float block_step(const device block_q4_1&, float acc, BlockTerms t) { return fma(t.m, t.d, fma(t.f, t.s, acc)); }
inline float block_step(const device block_q5_1&, float acc, BlockTerms t) { return fma(t.m, t.d, fma(t.f, t.s, acc)); }
inline float block_step(const device block_q4_K&, float acc, BlockTerms t) { return acc + t.f; }
inline float block_step(const device block_q5_K&, float acc, BlockTerms t) { return acc + t.f; }
inline float block_step(const device block_q6_K&, float acc, BlockTerms t) { return acc + t.f; }

// K-quants: p_b, the block's contribution.
inline float block_p(const device block_q4_K& b, const device char* x, float dx, const device int* xs) {
  int i1 = 0, i2 = 0;
  for (int c = 0; c < 4; ++c) {
    int lo = 0, hi = 0;
    for (int l = 0; l < 32; ++l) {
      lo += int(b.qs[32 * c + l] & 15) * int(x[64 * c + l]);
      hi += int(b.qs[32 * c + l] >> 4) * int(x[64 * c + 32 + l]);
    }
    i1 += int(kquant_scale_min(b.scales, 2 * c).x) * lo + int(kquant_scale_min(b.scales, 2 * c + 1).x) * hi;
  }
  for (int j = 0; j < 8; ++j) i2 += int(kquant_scale_min(b.scales, j).y) * (xs[2 * j] + xs[2 * j + 1]);
  return float(i1) * (float(b.d) * dx) - float(i2) * (float(b.dmin) * dx);
}
inline float block_p(const device block_q5_K& b, const device char* x, float dx, const device int* xs) {
  int i1 = 0, i2 = 0;
  for (int c = 0; c < 4; ++c) {
    int lo = 0, hi = 0;
    for (int l = 0; l < 32; ++l) {
      const int ql = int((b.qs[32 * c + l] & 15) | (((b.qh[l] >> (2 * c)) & 1) << 4));
      const int qu = int((b.qs[32 * c + l] >> 4) | (((b.qh[l] >> (2 * c + 1)) & 1) << 4));
      lo += ql * int(x[64 * c + l]);
      hi += qu * int(x[64 * c + 32 + l]);
    }
    i1 += int(kquant_scale_min(b.scales, 2 * c).x) * lo + int(kquant_scale_min(b.scales, 2 * c + 1).x) * hi;
  }
  for (int j = 0; j < 8; ++j) i2 += int(kquant_scale_min(b.scales, j).y) * (xs[2 * j] + xs[2 * j + 1]);
  return float(i1) * (float(b.d) * dx) - float(i2) * (float(b.dmin) * dx);
}
inline float block_p(const device block_q6_K& b, const device char* x, float dx, const device int* xs) {
  int g16[16];
  for (int g = 0; g < 16; ++g) g16[g] = 0;
  for (int h = 0; h < 2; ++h) {
    const device uchar* ql = b.ql + 64 * h;
    const device uchar* qh = b.qh + 32 * h;
    const device char* xh = x + 128 * h;
    for (int l = 0; l < 32; ++l) {
      const int g = 8 * h + l / 16;
      g16[g] += int((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) * int(xh[l]);
      g16[g + 2] += int((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) * int(xh[l + 32]);
      g16[g + 4] += int((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) * int(xh[l + 64]);
      g16[g + 6] += int((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) * int(xh[l + 96]);
    }
  }
  int i = 0;
  for (int g = 0; g < 16; ++g) i += int(b.scales[g]) * (g16[g] - 32 * xs[g]);
  return float(i) * (float(b.d) * dx);
}

inline BlockTerms block_t(const device block_q4_K& b, const device char* x, float dx, const device int* xs) {
  return {block_p(b, x, dx, xs), 0.0f, 0.0f, 0.0f};
}
inline BlockTerms block_t(const device block_q5_K& b, const device char* x, float dx, const device int* xs) {
  return {block_p(b, x, dx, xs), 0.0f, 0.0f, 0.0f};
}
inline BlockTerms block_t(const device block_q6_K& b, const device char* x, float dx, const device int* xs) {
  return {block_p(b, x, dx, xs), 0.0f, 0.0f, 0.0f};
}

// Element e of a block, dequantized with the CPU embedding's operations.
inline float deq(const device block_q8_0& b, int e) { return float(b.d) * float(b.qs[e]); }
inline int nib(const device uchar* qs, int e) { return e < 16 ? (qs[e] & 15) : (qs[e - 16] >> 4); }
inline float deq(const device block_q4_0& b, int e) { return float(b.d) * float(nib(b.qs, e) - 8); }
inline float deq(const device block_q4_1& b, int e) { return float(b.d) * float(nib(b.qs, e)) + float(b.m); }
inline float deq(const device block_q5_0& b, int e) {
  const int q = nib(b.qs, e) | int(((rd_u32(b.qh) >> e) & 1) << 4);
  return float(b.d) * float(q - 16);
}
inline float deq(const device block_q5_1& b, int e) {
  const int q = nib(b.qs, e) | int(((rd_u32(b.qh) >> e) & 1) << 4);
  return float(b.d) * float(q) + float(b.m);
}
inline float deq_k4(half d, half dmin, const device uchar* scales, const device uchar* qh, const device uchar* qs, int e) {
  const int j = e / 32, l = e % 32;
  int q = (qs[32 * (j / 2) + l] >> ((j & 1) * 4)) & 15;
  if (qh) q |= ((qh[l] >> j) & 1) << 4;
  const uchar2 sm = kquant_scale_min(scales, j);
  return (float(d) * float(sm.x)) * float(q) - float(dmin) * float(sm.y);
}
inline float deq(const device block_q4_K& b, int e) { return deq_k4(b.d, b.dmin, b.scales, nullptr, b.qs, e); }
inline float deq(const device block_q5_K& b, int e) { return deq_k4(b.d, b.dmin, b.scales, b.qh, b.qs, e); }
inline float deq(const device block_q6_K& b, int e) {
  const int h = e / 128, p = (e % 128) / 32, l = e % 32;
  const device uchar* ql = b.ql + 64 * h;
  const uchar qh = b.qh[32 * h + l];
  const int q = p == 0 ? (ql[l] & 15) | (((qh >> 0) & 3) << 4)
              : p == 1 ? (ql[l + 32] & 15) | (((qh >> 2) & 3) << 4)
              : p == 2 ? (ql[l] >> 4) | (((qh >> 4) & 3) << 4)
                       : (ql[l + 32] >> 4) | (((qh >> 6) & 3) << 4);
  return (float(b.d) * float(b.scales[e / 16])) * float(q - 32);
}

// Float weight element i (bf16 arrives as raw ushort bits).
inline float wload(const device float* w, ulong i) { return w[i]; }
inline float wload(const device half* w, ulong i) { return float(w[i]); }
inline float wload(const device ushort* w, ulong i) { return bf16_to_float(w[i]); }  // bf16 bits
