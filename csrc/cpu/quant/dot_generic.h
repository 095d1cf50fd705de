// Portable definition of the quantized matmul; each ISA TU includes this inside its own
// namespace under `#pragma GCC target`, so the integer loops vectorize for that ISA while the
// float operations (order fixed by the source, no fast-math, no contraction) keep their bits.
//
// The result for one output element is, for legacy types with per-block activation scale dx,
// integer sum sx and integer dot I (exact):
//   acc = 0;  for b in blocks: acc = acc + p_b
//   p_b = float(I_b) * (dw_b * dx_b)                            Q8_0, Q4_0, Q5_0 (offsets folded into I)
//   p_b = float(I_b) * (dw_b * dx_b) + mw_b * (dx_b * float(sx_b))      Q4_1, Q5_1
//   p_b = float(I1_b) * (d_b * dx_b) - float(I2_b) * (dmin_b * dx_b)    Q4_K, Q5_K (I2 = mins . sums)
//   p_b = float(I_b) * (d_b * dx_b)                              Q6_K
// Float weights: 16 lanes, lane[k % 16] += x[k] * w[k], folded 8, 4, 2, 1.
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
        float v = x[b * 32 + j] < 0 ? -x[b * 32 + j] : x[b * 32 + j];
        amax = amax > v ? amax : v;
      }
      const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
      int32_t s = 0;
      for (int j = 0; j < 32; ++j) {
        float v = x[b * 32 + j] * id;
        v = v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v);
        int32_t qi = int32_t(__builtin_nearbyintf(v));  // ties to even, as vcvtps2dq
        q[b * 32 + j] = int8_t(qi);
        s += qi;
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
        float v = x[b * 256 + j] < 0 ? -x[b * 256 + j] : x[b * 256 + j];
        amax = amax > v ? amax : v;
      }
      const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
      for (int g = 0; g < 16; ++g) {
        int32_t s = 0;
        for (int j = g * 16; j < g * 16 + 16; ++j) {
          float v = x[b * 256 + j] * id;
          v = v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v);
          int32_t qi = int32_t(__builtin_nearbyintf(v));
          q[b * 256 + j] = int8_t(qi);
          s += qi;
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

inline float dot_q8_0(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ8_0Bytes;
    acc = acc + float(idot_q8_0(blk, x.qs + b * 32)) * (H2F(rd16(blk)) * x.d[b]);
  }
  return acc;
}

inline float dot_q4_0(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ4_0Bytes;
    int32_t i = idot_nib(blk + 2, x.qs + b * 32) - 8 * x.s[b];
    acc = acc + float(i) * (H2F(rd16(blk)) * x.d[b]);
  }
  return acc;
}

inline float dot_q4_1(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ4_1Bytes;
    int32_t i = idot_nib(blk + 4, x.qs + b * 32);
    acc = acc + (float(i) * (H2F(rd16(blk)) * x.d[b]) + H2F(rd16(blk + 2)) * (x.d[b] * float(x.s[b])));
  }
  return acc;
}

inline float dot_q5_0(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ5_0Bytes;
    int32_t i = idot_nib5(blk + 2, blk + 6, x.qs + b * 32) - 16 * x.s[b];
    acc = acc + float(i) * (H2F(rd16(blk)) * x.d[b]);
  }
  return acc;
}

inline float dot_q5_1(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ5_1Bytes;
    int32_t i = idot_nib5(blk + 4, blk + 8, x.qs + b * 32);
    acc = acc + (float(i) * (H2F(rd16(blk)) * x.d[b]) + H2F(rd16(blk + 2)) * (x.d[b] * float(x.s[b])));
  }
  return acc;
}

// ---- K-quants: 256-blocks ------------------------------------------------------------------

inline float dot_q4_k(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ4_KBytes;
    const uint8_t* qs = blk + 16;
    const int8_t* xq = x.qs + b * 256;
    uint8_t sc[8], mn[8];
    kquant_scales(blk + 4, sc, mn);
    int32_t i1 = 0, i2 = 0;
    for (int c = 0; c < 4; ++c) {
      int32_t lo = 0, hi = 0;
      for (int l = 0; l < 32; ++l) {
        lo += int32_t(qs[32 * c + l] & 15) * int32_t(xq[64 * c + l]);
        hi += int32_t(qs[32 * c + l] >> 4) * int32_t(xq[64 * c + 32 + l]);
      }
      i1 += int32_t(sc[2 * c]) * lo + int32_t(sc[2 * c + 1]) * hi;
    }
    for (int j = 0; j < 8; ++j) i2 += int32_t(mn[j]) * (x.s[b * 16 + 2 * j] + x.s[b * 16 + 2 * j + 1]);
    acc = acc + (float(i1) * (H2F(rd16(blk)) * x.d[b]) - float(i2) * (H2F(rd16(blk + 2)) * x.d[b]));
  }
  return acc;
}

inline float dot_q5_k(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ5_KBytes;
    const uint8_t* qh = blk + 16;
    const uint8_t* qs = blk + 48;
    const int8_t* xq = x.qs + b * 256;
    uint8_t sc[8], mn[8];
    kquant_scales(blk + 4, sc, mn);
    int32_t i1 = 0, i2 = 0;
    for (int c = 0; c < 4; ++c) {
      int32_t lo = 0, hi = 0;
      for (int l = 0; l < 32; ++l) {
        int32_t ql = int32_t((qs[32 * c + l] & 15) | (((qh[l] >> (2 * c)) & 1) << 4));
        int32_t qu = int32_t((qs[32 * c + l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4));
        lo += ql * int32_t(xq[64 * c + l]);
        hi += qu * int32_t(xq[64 * c + 32 + l]);
      }
      i1 += int32_t(sc[2 * c]) * lo + int32_t(sc[2 * c + 1]) * hi;
    }
    for (int j = 0; j < 8; ++j) i2 += int32_t(mn[j]) * (x.s[b * 16 + 2 * j] + x.s[b * 16 + 2 * j + 1]);
    acc = acc + (float(i1) * (H2F(rd16(blk)) * x.d[b]) - float(i2) * (H2F(rd16(blk + 2)) * x.d[b]));
  }
  return acc;
}

inline float dot_q6_k(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ6_KBytes;
    const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
    const int8_t* xq = x.qs + b * 256;
    int32_t g16[16];  // unsigned-q dot of each 16-group; element e belongs to group e / 16
    for (int g = 0; g < 16; ++g) g16[g] = 0;
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = blk + 64 * h;
      const uint8_t* qh = blk + 128 + 32 * h;
      const int8_t* xh = xq + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int g = 8 * h + l / 16;
        g16[g] += int32_t((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) * int32_t(xh[l]);
        g16[g + 2] += int32_t((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) * int32_t(xh[l + 32]);
        g16[g + 4] += int32_t((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) * int32_t(xh[l + 64]);
        g16[g + 6] += int32_t((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) * int32_t(xh[l + 96]);
      }
    }
    int32_t i = 0;
    for (int g = 0; g < 16; ++g) i += int32_t(sc[g]) * (g16[g] - 32 * x.s[b * 16 + g]);
    acc = acc + float(i) * (H2F(rd16(blk + 208)) * x.d[b]);
  }
  return acc;
}

// ---- float weights: 16 fixed lanes ---------------------------------------------------------

template <typename Load>
inline float dot_lanes16(const float* x, int64_t k, Load wv) {
  float lanes[16];
  for (int l = 0; l < 16; ++l) lanes[l] = 0.0f;
  int64_t i = 0;
  for (; i + 16 <= k; i += 16)
    for (int l = 0; l < 16; ++l) lanes[l] = lanes[l] + x[i + l] * wv(i + l);
  for (; i < k; ++i) lanes[i & 15] = lanes[i & 15] + x[i] * wv(i);
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
  tb.cols[kQ4_K] = &cols_generic<dot_q4_k, 256>;
  tb.cols[kQ5_K] = &cols_generic<dot_q5_k, 256>;
  tb.cols[kQ6_K] = &cols_generic<dot_q6_k, 256>;
}
