// Portable definition of the quantized matmul; each ISA TU includes this inside its own
// namespace under `#pragma GCC target`, so the integer loops vectorize for that ISA while the
// float operations (order fixed by the source, no fast-math, no contraction) keep their bits.
//
// The result for one output element is, for legacy types with per-block activation scale dx,
// integer sum sx and integer dot I (exact), with fused multiply-adds (one rounding each):
//   acc = 0;  for b in blocks:
//     acc = fma(float(I_b), dw_b * dx_b, acc)                   Q8_0, Q4_0, Q5_0 (offsets folded into I)
//     acc = fma(mw_b, dx_b * float(sx_b), fma(float(I_b), dw_b * dx_b, acc))   Q4_1, Q5_1
// and for the K-quants:
//   acc = 0;  for b in blocks: acc = acc + p_b
//   p_b = float(I1_b) * (d_b * dx_b) - float(I2_b) * (dmin_b * dx_b)    Q4_K, Q5_K (I2 = mins . sums)
//   p_b = float(I_b) * (d_b * dx_b)                              Q6_K
// Float weights: 16 lanes, lane[k % 16] = fma(x[k], w[k], lane[k % 16]), folded 8, 4, 2, 1.
// Any faster path must produce exactly these bits. The including TU defines H2F (f16 -> f32, exact).
// (No include guard: included once per ISA namespace.)

inline void quant_rows32(const ActRows& a, int64_t r0, int64_t r1) {
  const int64_t nb = a.k / 32;
  for (int64_t r = r0; r < r1; ++r) {
    const float* x = a.x + r * a.k;
    int8_t* q = a.qs + r * a.k;
    for (int64_t b = 0; b < nb; ++b) {
      float amax = 0.0f;
      for (int j = 0; j < 32; ++j) {
        float v = __builtin_fabsf(x[b * 32 + j]);
        amax = amax > v ? amax : v;
      }
      const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
      int32_t s = 0;
      for (int j = 0; j < 32; ++j) {
        float v = x[b * 32 + j] * id;
        v = v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v);
        // ties to even, as vcvtps2dq; a NaN activation gives INT32_MIN as it does (a plain cast of
        // NaN is undefined), and the sum wraps (only such rows, whose scale is NaN, come near overflow)
        int32_t qi = v == v ? int32_t(__builtin_nearbyintf(v)) : INT32_MIN;
        q[b * 32 + j] = int8_t(qi);
        s = int32_t(uint32_t(s) + uint32_t(qi));
      }
      a.d[r * a.d_per_row + b] = d;
      a.s[r * a.s_per_row + b] = s;
    }
  }
}

inline void quant_rows256(const ActRows& a, int64_t r0, int64_t r1) {
  const int64_t nb = a.k / 256;
  for (int64_t r = r0; r < r1; ++r) {
    const float* x = a.x + r * a.k;
    int8_t* q = a.qs + r * a.k;
    for (int64_t b = 0; b < nb; ++b) {
      float amax = 0.0f;
      for (int j = 0; j < 256; ++j) {
        float v = __builtin_fabsf(x[b * 256 + j]);
        amax = amax > v ? amax : v;
      }
      const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
      for (int g = 0; g < 16; ++g) {
        int32_t s = 0;
        for (int j = g * 16; j < g * 16 + 16; ++j) {
          float v = x[b * 256 + j] * id;
          v = v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v);
          int32_t qi = v == v ? int32_t(__builtin_nearbyintf(v)) : INT32_MIN;  // as in quant_rows32
          q[b * 256 + j] = int8_t(qi);
          s = int32_t(uint32_t(s) + uint32_t(qi));
        }
        a.s[r * a.s_per_row + b * 16 + g] = s;
      }
      a.d[r * a.d_per_row + b] = d;
    }
  }
}

// Per-row view of the quantized activations.
struct XRow {
  const float* x;
  const int8_t* qs;
  const float* d;
  const int32_t* s;
};

inline XRow xrow(const ActRows& a, int64_t t) {
  return {a.x + t * a.k, a.qs ? a.qs + t * a.k : nullptr, a.d ? a.d + t * a.d_per_row : nullptr,
          a.s ? a.s + t * a.s_per_row : nullptr};
}

// ---- legacy 32-blocks: integer dot of one block --------------------------------------------

inline int32_t idot_q8_0(const uint8_t* blk, const int8_t* x) {
  const int8_t* q = reinterpret_cast<const int8_t*>(blk + 2);
  int32_t s = 0;
  for (int j = 0; j < 32; ++j) s += int32_t(q[j]) * int32_t(x[j]);
  return s;
}

inline int32_t idot_nib(const uint8_t* qs, const int8_t* x) {  // 16 bytes of nibbles vs 32 x
  int32_t s = 0;
  for (int j = 0; j < 16; ++j) s += int32_t(qs[j] & 15) * int32_t(x[j]) + int32_t(qs[j] >> 4) * int32_t(x[j + 16]);
  return s;
}

inline int32_t idot_nib5(const uint8_t* qh4, const uint8_t* qs, const int8_t* x) {
  const uint32_t qh = rd32(qh4);
  int32_t s = 0;
  for (int j = 0; j < 16; ++j) {
    int32_t lo = int32_t((qs[j] & 15) | (((qh >> j) & 1) << 4));
    int32_t hi = int32_t((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
    s += lo * int32_t(x[j]) + hi * int32_t(x[j + 16]);
  }
  return s;
}

// One legacy block's step of the recipe above: s = dw * dx; mw, dsx = dx * float(sx) for the types with a min.
inline float fma_block(float acc, int32_t i, float s) { return __builtin_fmaf(float(i), s, acc); }
inline float fma_block_min(float acc, int32_t i, float s, float mw, float dsx) {
  return __builtin_fmaf(mw, dsx, __builtin_fmaf(float(i), s, acc));
}

inline float dot_q8_0(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ8_0Bytes;
    acc = fma_block(acc, idot_q8_0(blk, x.qs + b * 32), H2F(rd16(blk)) * x.d[b]);
  }
  return acc;
}

inline float dot_q4_0(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ4_0Bytes;
    int32_t i = idot_nib(blk + 2, x.qs + b * 32) - 8 * x.s[b];
    acc = fma_block(acc, i, H2F(rd16(blk)) * x.d[b]);
  }
  return acc;
}

inline float dot_q4_1(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ4_1Bytes;
    int32_t i = idot_nib(blk + 4, x.qs + b * 32);
    acc = fma_block_min(acc, i, H2F(rd16(blk)) * x.d[b], H2F(rd16(blk + 2)), x.d[b] * float(x.s[b]));
  }
  return acc;
}

inline float dot_q5_0(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ5_0Bytes;
    int32_t i = idot_nib5(blk + 2, blk + 6, x.qs + b * 32) - 16 * x.s[b];
    acc = fma_block(acc, i, H2F(rd16(blk)) * x.d[b]);
  }
  return acc;
}

inline float dot_q5_1(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ5_1Bytes;
    int32_t i = idot_nib5(blk + 4, blk + 8, x.qs + b * 32);
    acc = fma_block_min(acc, i, H2F(rd16(blk)) * x.d[b], H2F(rd16(blk + 2)), x.d[b] * float(x.s[b]));
  }
  return acc;
}

// ---- K-quants: 256-blocks ------------------------------------------------------------------
// A block is unpacked once into element-order quants (0..63) and integer scales; its integer
// dots with every activation row follow. Loops are plain so each ISA vectorizes them.

struct KBlock {
  alignas(64) uint8_t q[256];
  int32_t sc[16], mn[8];  // Q4_K/Q5_K: 8 scales + 8 mins per 32; Q6_K: 16 signed scales per 16
  float d, dmin;
};

inline int32_t idot_u8s8(const uint8_t* a, const int8_t* b, int n) {
  int32_t s = 0;
  for (int j = 0; j < n; ++j) s += int32_t(a[j]) * int32_t(b[j]);
  return s;
}

template <WKind K>
inline void unpack_kblock(const uint8_t* blk, KBlock& u) {
  if constexpr (K == kQ6_K) {
#ifdef EYAS_KUNPACK_DEFINED
    kunpack_q6(blk, blk + 128, u.q);
#else
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = blk + 64 * h;
      const uint8_t* qh = blk + 128 + 32 * h;
      uint8_t* q = u.q + 128 * h;
      for (int l = 0; l < 32; ++l) {
        q[l] = uint8_t((ql[l] & 15) | ((qh[l] & 3) << 4));
        q[l + 32] = uint8_t((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4));
        q[l + 64] = uint8_t((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
        q[l + 96] = uint8_t((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
      }
    }
#endif
    for (int g = 0; g < 16; ++g) u.sc[g] = int8_t(blk[192 + g]);
    u.d = H2F(rd16(blk + 208));
  } else {
    const uint8_t* qs = blk + (K == kQ5_K ? 48 : 16);
#ifdef EYAS_KUNPACK_DEFINED
    kunpack_q45(qs, K == kQ5_K ? blk + 16 : nullptr, u.q);
#else
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        u.q[64 * c + l] = uint8_t(qs[32 * c + l] & 15);
        u.q[64 * c + 32 + l] = uint8_t(qs[32 * c + l] >> 4);
      }
    if constexpr (K == kQ5_K) {
      const uint8_t* qh = blk + 16;
      for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
          u.q[64 * c + l] = uint8_t(u.q[64 * c + l] | (((qh[l] >> (2 * c)) & 1) << 4));
          u.q[64 * c + 32 + l] = uint8_t(u.q[64 * c + 32 + l] | (((qh[l] >> (2 * c + 1)) & 1) << 4));
        }
    }
#endif
    uint8_t sc[8], mn[8];
    kquant_scales(blk + 4, sc, mn);
    for (int j = 0; j < 8; ++j) u.sc[j] = sc[j], u.mn[j] = mn[j];
    u.d = H2F(rd16(blk));
    u.dmin = H2F(rd16(blk + 2));
  }
}

#ifndef EYAS_KDOTS_DEFINED
inline void kdots32(const uint8_t* q, const int8_t* x, int32_t* out) {
  for (int s = 0; s < 8; ++s) out[s] = idot_u8s8(q + 32 * s, x + 32 * s, 32);
}
inline void kdots16(const uint8_t* q, const int8_t* x, int32_t* out) {
  for (int s = 0; s < 16; ++s) out[s] = idot_u8s8(q + 16 * s, x + 16 * s, 16);
}
#endif

// p_b of the definition for one unpacked block and one activation row (block b of that row).
template <WKind K>
inline float kblock_term(const KBlock& u, const XRow& x, int64_t b) {
  const int8_t* xq = x.qs + b * 256;
  const int32_t* bs = x.s + b * 16;
  if constexpr (K == kQ6_K) {
    int32_t dots[16], i = 0;
    kdots16(u.q, xq, dots);
    for (int g = 0; g < 16; ++g) i += u.sc[g] * (dots[g] - 32 * bs[g]);
    return float(i) * (u.d * x.d[b]);
  } else {
    int32_t dots[8], i1 = 0, i2 = 0;
    kdots32(u.q, xq, dots);
    for (int j = 0; j < 8; ++j) i1 += u.sc[j] * dots[j];
    for (int j = 0; j < 8; ++j) i2 += u.mn[j] * (bs[2 * j] + bs[2 * j + 1]);
    return float(i1) * (u.d * x.d[b]) - float(i2) * (u.dmin * x.d[b]);
  }
}

// Every activation row at once: each weight row is unpacked once per call, then every
// activation row runs over it (rows inner would read T blocks K bytes apart: few L1 sets).
// `Term` computes kblock_term's bits (an ISA may give its own, see kquant_neon.h).
template <WKind K, float (*Term)(const KBlock&, const XRow&, int64_t) = kblock_term<K>>
void cols_kquant(const Job& j, int64_t n0, int64_t n1) {
  constexpr int bytes = K == kQ4_K ? kQ4_KBytes : K == kQ5_K ? kQ5_KBytes : kQ6_KBytes;
  const int64_t nb = j.k / 256;
  KBlock* u = reinterpret_cast<KBlock*>(thread_scratch<kScratchUnpacked>(size_t(nb) * sizeof(KBlock)));
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* wr = j.w + n * j.wrow;
    for (int64_t b = 0; b < nb; ++b) unpack_kblock<K>(wr + b * bytes, u[b]);
    for (int64_t t = 0; t < j.t; ++t) {
      const XRow x = xrow(j.act, t);
      float y = 0.0f;
      for (int64_t b = 0; b < nb; ++b) y = y + Term(u[b], x, b);
      j.y[t * j.n + n] = y;
    }
  }
}

// ---- float weights: 16 fixed lanes ---------------------------------------------------------

// Fused multiply-adds, so a SIMD tile does one instruction per 16 products (fmaf is exact
// everywhere; the scalar table calls libm's).
template <typename Load>
inline float dot_lanes16(const float* x, int64_t k, Load wv) {
  float lanes[16];
  for (int l = 0; l < 16; ++l) lanes[l] = 0.0f;
  int64_t i = 0;
  for (; i + 16 <= k; i += 16)
    for (int l = 0; l < 16; ++l) lanes[l] = __builtin_fmaf(x[i + l], wv(i + l), lanes[l]);
  for (; i < k; ++i) lanes[i & 15] = __builtin_fmaf(x[i], wv(i), lanes[i & 15]);
  for (int s = 8; s >= 1; s /= 2)
    for (int l = 0; l < s; ++l) lanes[l] = lanes[l] + lanes[l + s];
  return lanes[0];
}

inline float dot_f32(const uint8_t* w, const XRow& x, int64_t k) {
  const float* wf = reinterpret_cast<const float*>(w);
  return dot_lanes16(x.x, k, [wf](int64_t i) { return wf[i]; });
}
inline float dot_f16(const uint8_t* w, const XRow& x, int64_t k) {
  const uint16_t* wh = reinterpret_cast<const uint16_t*>(w);
  return dot_lanes16(x.x, k, [wh](int64_t i) { return H2F(wh[i]); });
}
inline float dot_bf16(const uint8_t* w, const XRow& x, int64_t k) {
  const uint16_t* wh = reinterpret_cast<const uint16_t*>(w);
  return dot_lanes16(x.x, k, [wh](int64_t i) { return bf2f(wh[i]); });
}

// ---- column kernels ------------------------------------------------------------------------

// Each weight row is read once per call and reused (from L1) for every activation row.
template <float (*Dot)(const uint8_t*, const XRow&, int64_t), int BlockElems>
void cols_generic(const Job& j, int64_t n0, int64_t n1) {
  const int64_t len = j.k / BlockElems;
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* wr = j.w + n * j.wrow;
    for (int64_t t = 0; t < j.t; ++t) j.y[t * j.n + n] = Dot(wr, xrow(j.act, t), len);
  }
}

inline void fill_generic(Table& tb) {
  tb.quant32 = &quant_rows32;
  tb.quant256 = &quant_rows256;
  tb.cols[kF32] = &cols_generic<dot_f32, 1>;
  tb.cols[kF16] = &cols_generic<dot_f16, 1>;
  tb.cols[kBF16] = &cols_generic<dot_bf16, 1>;
  tb.cols[kQ8_0] = &cols_generic<dot_q8_0, 32>;
  tb.cols[kQ4_0] = &cols_generic<dot_q4_0, 32>;
  tb.cols[kQ4_1] = &cols_generic<dot_q4_1, 32>;
  tb.cols[kQ5_0] = &cols_generic<dot_q5_0, 32>;
  tb.cols[kQ5_1] = &cols_generic<dot_q5_1, 32>;
  tb.cols[kQ4_K] = &cols_kquant<kQ4_K>;
  tb.cols[kQ5_K] = &cols_kquant<kQ5_K>;
  tb.cols[kQ6_K] = &cols_kquant<kQ6_K>;
}
