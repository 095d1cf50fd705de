// AVX-512 VNNI building blocks for the legacy 32-block dots; included only from TUs compiled
// under `#pragma GCC target` with avx512f/bw/vl/dq/vnni/vbmi. Integer results are exact and
// the float epilogue applies the same operations, in the same order, as dot_generic.h.
// (No include guard: included once per ISA namespace.)

// Per-block sums of 4 blocks: a holds blocks 0,1 (8 lanes each), c blocks 2,3 -> [s0 s1 s2 s3].
static inline __m128i sum_blocks_8x4(__m512i a, __m512i c) {
  __m512i t = _mm512_add_epi32(_mm512_unpacklo_epi64(a, c), _mm512_unpackhi_epi64(a, c));
  t = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, _MM_PERM_CDAB));
  t = _mm512_add_epi32(t, _mm512_shuffle_i32x4(t, t, 0xB1));
  const __m512i idx = _mm512_setr_epi32(0, 8, 2, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castsi512_si128(_mm512_permutexvar_epi32(idx, t));
}

// Per-block sums when 128-bit lane i holds block i's 4 partials -> [s0 s1 s2 s3].
static inline __m128i sum_blocks_4x4(__m512i a) {
  __m512i t = _mm512_add_epi32(a, _mm512_shuffle_epi32(a, _MM_PERM_BADC));
  t = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, _MM_PERM_CDAB));
  const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castsi512_si128(_mm512_permutexvar_epi32(idx, t));
}

// Four f16 scales at p, p+stride, p+2*stride, p+3*stride as floats (exact).
static inline __m128 load_h4(const uint8_t* p, int stride) {
  __m128i h = _mm_setr_epi16(short(rd16(p)), short(rd16(p + stride)), short(rd16(p + 2 * stride)),
                             short(rd16(p + 3 * stride)), 0, 0, 0, 0);
  return _mm_cvtph_ps(h);
}

// dot_generic.h's block steps (fma_block, fma_block_min) for 4 blocks in block order: lane i of I (the
// integer dot), s (dw * dx), and for the types with a min, mw and dsx (dx * float(sx)).
static inline float fma_in_order(float acc, __m128i i, __m128 s) {
  alignas(16) int32_t iv[4];
  alignas(16) float sv[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(iv), i), _mm_store_ps(sv, s);
  for (int k = 0; k < 4; ++k) acc = fma_block(acc, iv[k], sv[k]);
  return acc;
}
static inline float fma_min_in_order(float acc, __m128i i, __m128 s, __m128 mw, __m128 dsx) {
  alignas(16) int32_t iv[4];
  alignas(16) float sv[4], mv[4], dv[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(iv), i), _mm_store_ps(sv, s), _mm_store_ps(mv, mw), _mm_store_ps(dv, dsx);
  for (int k = 0; k < 4; ++k) acc = fma_block_min(acc, iv[k], sv[k], mv[k], dv[k]);
  return acc;
}

// 16 nibble bytes of 4 blocks (at p + off + i*stride) -> low and high nibbles; 128-bit lane i = block i.
static inline void load_nibbles4(const uint8_t* p, int stride, __m512i* lo, __m512i* hi) {
  __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + stride)), 1);
  v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * stride)), 2);
  v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 3 * stride)), 3);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  *lo = _mm512_and_si512(v, m4);
  *hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
}

// Activations of 4 blocks split into first halves (elements 0..15 of each block) and second halves.
static inline void load_x_halves4(const int8_t* x, __m512i* xlo, __m512i* xhi) {
  const __m512i a = _mm512_loadu_si512(x), b = _mm512_loadu_si512(x + 64);
  *xlo = _mm512_permutex2var_epi64(a, _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13), b);
  *xhi = _mm512_permutex2var_epi64(a, _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15), b);
}

static inline __m256i ld256(const uint8_t* q) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)); }

static inline float dot_q8_0_v(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    const uint8_t* p = w + b * kQ8_0Bytes;
    __m512i w01 = _mm512_inserti64x4(_mm512_castsi256_si512(ld256(p + 2)), ld256(p + 36), 1);
    __m512i w23 = _mm512_inserti64x4(_mm512_castsi256_si512(ld256(p + 70)), ld256(p + 104), 1);
    // (w + 128) as unsigned times signed x, minus 128 * sum(x): exact for every int8 weight.
    __m512i a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(w01, flip), _mm512_loadu_si512(x.qs + b * 32));
    __m512i c = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(w23, flip), _mm512_loadu_si512(x.qs + b * 32 + 64));
    __m128i xs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.s + b));
    __m128i i = _mm_sub_epi32(sum_blocks_8x4(a, c), _mm_slli_epi32(xs, 7));
    __m128 s = _mm_mul_ps(load_h4(p, kQ8_0Bytes), _mm_loadu_ps(x.d + b));
    acc = fma_in_order(acc, i, s);
  }
  for (; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ8_0Bytes;
    acc = fma_block(acc, idot_q8_0(blk, x.qs + b * 32), H2F(rd16(blk)) * x.d[b]);
  }
  return acc;
}

static inline float dot_q4_0_v(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    const uint8_t* p = w + b * kQ4_0Bytes;
    __m512i lo, hi, xlo, xhi;
    load_nibbles4(p + 2, kQ4_0Bytes, &lo, &hi);
    load_x_halves4(x.qs + b * 32, &xlo, &xhi);
    __m512i a = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xlo), hi, xhi);
    __m128i xs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.s + b));
    __m128i i = _mm_sub_epi32(sum_blocks_4x4(a), _mm_slli_epi32(xs, 3));
    __m128 s = _mm_mul_ps(load_h4(p, kQ4_0Bytes), _mm_loadu_ps(x.d + b));
    acc = fma_in_order(acc, i, s);
  }
  for (; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ4_0Bytes;
    acc = fma_block(acc, idot_nib(blk + 2, x.qs + b * 32) - 8 * x.s[b], H2F(rd16(blk)) * x.d[b]);
  }
  return acc;
}

static inline float dot_q4_1_v(const uint8_t* w, const XRow& x, int64_t nb) {
  float acc = 0.0f;
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    const uint8_t* p = w + b * kQ4_1Bytes;
    __m512i lo, hi, xlo, xhi;
    load_nibbles4(p + 4, kQ4_1Bytes, &lo, &hi);
    load_x_halves4(x.qs + b * 32, &xlo, &xhi);
    __m512i a = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xlo), hi, xhi);
    __m128 dx = _mm_loadu_ps(x.d + b);
    __m128 sx = _mm_cvtepi32_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.s + b)));
    acc = fma_min_in_order(acc, sum_blocks_4x4(a), _mm_mul_ps(load_h4(p, kQ4_1Bytes), dx),
                           load_h4(p + 2, kQ4_1Bytes), _mm_mul_ps(dx, sx));
  }
  for (; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ4_1Bytes;
    int32_t i = idot_nib(blk + 4, x.qs + b * 32);
    acc = fma_block_min(acc, i, H2F(rd16(blk)) * x.d[b], H2F(rd16(blk + 2)), x.d[b] * float(x.s[b]));
  }
  return acc;
}

// ---- Q4_0 / Q4_1 / Q5_0 / Q5_1, 4 weight rows x 4 blocks per step ----------------------------------------
// The per-block integer sums of 4 rows are reduced together (lane 4*i + c = row c, block i) and
// the float epilogue runs on 16 lanes at once; each row still adds its blocks in order.

struct Q4Perm {
  alignas(64) uint8_t qs[64];       // nibble bytes of 4 blocks from two 64-byte loads
  alignas(64) uint16_t pair[32];    // d (and m) of 4 blocks of 2 rows
  alignas(64) uint16_t merge[32];   // [16 d][16 m] in lane order 4*i + c
  // Q5 blocks are too long for all four scales to sit in the first load:
  alignas(64) uint16_t one[32];     // [d0..d3 m0..m3] of one row from its two loads
  alignas(64) uint16_t two[32];     // 8 words of row a, then 8 of row b
  alignas(64) uint16_t merge2[32];  // [16 d][16 m] in lane order 4*i + c from two `two`s
};

template <int B, int QO>
static const Q4Perm& q4_perm() {
  static const Q4Perm p = [] {
    Q4Perm q{};
    constexpr int second = 4 * B - 64;  // the second load ends exactly at the 4th block's end
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 16; ++j) {
        int off = B * i + QO + j;
        q.qs[16 * i + j] = uint8_t(off < 64 ? off : 64 + off - second);
      }
    for (int i = 0; i < 4; ++i)
      for (int c = 0; c < 2; ++c) {
        q.pair[2 * i + c] = uint16_t(32 * c + (B / 2) * i);
        q.pair[8 + 2 * i + c] = uint16_t(32 * c + (B / 2) * i + 1);
      }
    for (int i = 0; i < 4; ++i)
      for (int c = 0; c < 4; ++c) {
        q.merge[4 * i + c] = uint16_t((c < 2 ? 0 : 32) + 2 * i + (c & 1));
        q.merge[16 + 4 * i + c] = uint16_t((c < 2 ? 0 : 32) + 8 + 2 * i + (c & 1));
      }
    for (int i = 0; i < 4; ++i)
      for (int h = 0; h < 2; ++h) {  // h = 0: d, h = 1: m (2 bytes later)
        int off = B * i + 2 * h;
        q.one[4 * h + i] = uint16_t(off + 2 <= 64 ? off / 2 : 32 + (off - second) / 2);
      }
    for (int k = 0; k < 16; ++k) q.two[k] = uint16_t(k < 8 ? k : 32 + k - 8);
    for (int i = 0; i < 4; ++i)
      for (int c = 0; c < 4; ++c)
        for (int h = 0; h < 2; ++h) q.merge2[16 * h + 4 * i + c] = uint16_t((c < 2 ? 0 : 32) + 8 * (c & 1) + 4 * h + i);
    return q;
  }();
  return p;
}

template <WKind K>
static inline void dot4_q4(const uint8_t* const* wc, const XRow& x, int64_t nb, float* out) {
  constexpr bool kMin = K == kQ4_1 || K == kQ5_1, kFive = K == kQ5_0 || K == kQ5_1;
  constexpr int B = K == kQ4_0 ? kQ4_0Bytes : K == kQ4_1 ? kQ4_1Bytes : K == kQ5_0 ? kQ5_0Bytes : kQ5_1Bytes;
  constexpr int QO = B - 16, second = 4 * B - 64, kShift = kFive ? 4 : 3;  // offset 8 or 16 = 1 << kShift
  const Q4Perm& pm = q4_perm<B, QO>();
  const __m512i pq = _mm512_load_si512(pm.qs), pp = _mm512_load_si512(pm.pair), pg = _mm512_load_si512(pm.merge);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i bcast = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  __m128 acc = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; b += 4) {
    const int nblk = int(nb - b < 4 ? nb - b : 4);
    // Masked loads never touch bytes past the last block of a row.
    const uint64_t bytes = uint64_t(nblk) * B;
    const __mmask64 k0 = bytes >= 64 ? ~__mmask64(0) : (__mmask64(1) << bytes) - 1;
    const __mmask64 k1 = bytes <= uint64_t(second) ? 0 : ((bytes - second) >= 64 ? ~__mmask64(0) : (__mmask64(1) << (bytes - second)) - 1);
    const __mmask64 kx = nblk >= 2 ? ~__mmask64(0) : (__mmask64(1) << (32 * nblk)) - 1;
    const __mmask64 kx2 = nblk >= 4 ? ~__mmask64(0) : (nblk <= 2 ? 0 : (__mmask64(1) << (32 * (nblk - 2))) - 1);
    const __m512i xa = _mm512_maskz_loadu_epi8(kx, x.qs + b * 32), xb = _mm512_maskz_loadu_epi8(kx2, x.qs + b * 32 + 64);
    const __m512i xlo = _mm512_permutex2var_epi64(xa, _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13), xb);
    const __m512i xhi = _mm512_permutex2var_epi64(xa, _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15), xb);
    __m512i a[4], l0[4], l1[4];
    for (int c = 0; c < 4; ++c) {
      const uint8_t* p = wc[c] + b * B;
      l0[c] = _mm512_maskz_loadu_epi8(k0, p);
      l1[c] = _mm512_maskz_loadu_epi8(k1, p + second);
      const __m512i q = _mm512_permutex2var_epi8(l0[c], pq, l1[c]);
      __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
      if constexpr (kFive) {  // fifth bits: bit j of a block's qh belongs to element j
        uint64_t mlo = 0, mhi = 0;
        for (int i = 0; i < nblk; ++i) {
          const uint32_t qh = rd32(p + B * i + QO - 4);
          mlo |= uint64_t(qh & 0xffff) << (16 * i);
          mhi |= uint64_t(qh >> 16) << (16 * i);
        }
        const __m512i sixteen = _mm512_set1_epi8(16);
        lo = _mm512_mask_add_epi8(lo, __mmask64(mlo), lo, sixteen);
        hi = _mm512_mask_add_epi8(hi, __mmask64(mhi), hi, sixteen);
      }
      a[c] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xlo), hi, xhi);
    }
    const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[0], a[1]), _mm512_unpackhi_epi32(a[0], a[1]));
    const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2], a[3]), _mm512_unpackhi_epi32(a[2], a[3]));
    __m512i u = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
    const __mmask8 k4 = __mmask8((1u << nblk) - 1);
    const __m512 dx = _mm512_permutexvar_ps(bcast, _mm512_castps128_ps512(_mm_maskz_loadu_ps(k4, x.d + b)));
    const __m512i sx = _mm512_permutexvar_epi32(bcast, _mm512_castsi128_si512(_mm_maskz_loadu_epi32(k4, x.s + b)));
    __m512i sc;
    if constexpr (3 * B + 4 <= 64) {  // every scale in the first load
      const __m512i s01 = _mm512_permutex2var_epi16(l0[0], pp, l0[1]), s23 = _mm512_permutex2var_epi16(l0[2], pp, l0[3]);
      sc = _mm512_permutex2var_epi16(s01, pg, s23);
    } else {
      const __m512i p1 = _mm512_load_si512(pm.one), p2 = _mm512_load_si512(pm.two);
      __m512i r[4];
      for (int c = 0; c < 4; ++c) r[c] = _mm512_permutex2var_epi16(l0[c], p1, l1[c]);
      const __m512i s01 = _mm512_permutex2var_epi16(r[0], p2, r[1]), s23 = _mm512_permutex2var_epi16(r[2], p2, r[3]);
      sc = _mm512_permutex2var_epi16(s01, _mm512_load_si512(pm.merge2), s23);
    }
    const __m512 dw = _mm512_cvtph_ps(_mm512_castsi512_si256(sc));
    if constexpr (!kMin) u = _mm512_sub_epi32(u, _mm512_slli_epi32(sx, kShift));
    const __m512 f = _mm512_cvtepi32_ps(u), s = _mm512_mul_ps(dw, dx);
    __m512 mw = _mm512_setzero_ps(), dsx = _mm512_setzero_ps();
    if constexpr (kMin) mw = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(sc, 1)), dsx = _mm512_mul_ps(dx, _mm512_cvtepi32_ps(sx));
    // Block i's 4 rows in 128-bit lane i: its steps follow block i - 1's, as dot_generic.h orders them.
    auto step = [&](__m128 fi, __m128 si, __m128 mi, __m128 di) {
      acc = _mm_fmadd_ps(fi, si, acc);
      if constexpr (kMin) acc = _mm_fmadd_ps(mi, di, acc);
    };
    step(_mm512_castps512_ps128(f), _mm512_castps512_ps128(s), _mm512_castps512_ps128(mw), _mm512_castps512_ps128(dsx));
    if (nblk > 1)
      step(_mm512_extractf32x4_ps(f, 1), _mm512_extractf32x4_ps(s, 1), _mm512_extractf32x4_ps(mw, 1), _mm512_extractf32x4_ps(dsx, 1));
    if (nblk > 2)
      step(_mm512_extractf32x4_ps(f, 2), _mm512_extractf32x4_ps(s, 2), _mm512_extractf32x4_ps(mw, 2), _mm512_extractf32x4_ps(dsx, 2));
    if (nblk > 3)
      step(_mm512_extractf32x4_ps(f, 3), _mm512_extractf32x4_ps(s, 3), _mm512_extractf32x4_ps(mw, 3), _mm512_extractf32x4_ps(dsx, 3));
  }
  _mm_storeu_ps(out, acc);
}

// Columns in groups of 4 (a short last group repeats its last row and drops the copies).
template <WKind K>
void cols_q4x4(const Job& j, int64_t n0, int64_t n1) {
  const int64_t nb = j.k / 32;
  for (int64_t n = n0; n < n1; n += 4) {
    const uint8_t* wc[4];
    for (int c = 0; c < 4; ++c) wc[c] = j.w + (n + c < n1 ? n + c : n1 - 1) * j.wrow;
    const int64_t cols = n1 - n < 4 ? n1 - n : 4;
    if (n + 12 < n1) {  // request the rows 3 groups ahead early (see cols_q8_0)
      const char* ahead = reinterpret_cast<const char*>(j.w + (n + 12) * j.wrow);
      for (size_t off = 0; off < 4 * j.wrow; off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
    }
    for (int64_t t = 0; t < j.t; ++t) {
      float out[4];
      dot4_q4<K>(wc, xrow(j.act, t), nb, out);
      for (int64_t c = 0; c < cols; ++c) j.y[t * j.n + n + c] = out[c];
    }
  }
}

// ---- float weights: the 16 lanes of dot_lanes16 are the 16 lanes of one zmm ----------------

template <WKind K>
static inline __m512 load_w16(const uint8_t* w, int64_t i, __mmask16 m) {
  if constexpr (K == kF32) return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(w) + i);
  const __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(w) + i);
  if constexpr (K == kF16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));  // BF16
}


// ---- activation quantization: the operations of quant_rows32/256, 16 lanes at a time -------

static inline __m512i quant16(__m512 x, __m512 id) {
  __m512 v = _mm512_mul_ps(x, id);
  v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  return _mm512_cvtps_epi32(v);  // round half to even (default MXCSR), as nearbyintf
}

static inline float block_scale(float amax, float* id) {
  const float d = amax / 127.0f;
  *id = d != 0.0f ? 1.0f / d : 0.0f;
  return d;
}

inline void quant_rows32_v(const ActRows& a, int64_t r0, int64_t r1) {
  const int64_t nb = a.k / 32;
  for (int64_t r = r0; r < r1; ++r) {
    const float* x = a.x + r * a.k;
    int8_t* q = a.qs + r * a.k;
    for (int64_t b = 0; b < nb; ++b) {
      const __m512 x0 = _mm512_loadu_ps(x + 32 * b), x1 = _mm512_loadu_ps(x + 32 * b + 16);
      float id;
      const float d = block_scale(_mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1))), &id);
      const __m512 idv = _mm512_set1_ps(id);
      const __m512i q0 = quant16(x0, idv), q1 = quant16(x1, idv);
      _mm512_mask_cvtepi32_storeu_epi8(q + 32 * b, 0xffff, q0);
      _mm512_mask_cvtepi32_storeu_epi8(q + 32 * b + 16, 0xffff, q1);
      a.d[r * a.d_per_row + b] = d;
      a.s[r * a.s_per_row + b] = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    }
  }
}

inline void quant_rows256_v(const ActRows& a, int64_t r0, int64_t r1) {
  const int64_t nb = a.k / 256;
  for (int64_t r = r0; r < r1; ++r) {
    const float* x = a.x + r * a.k;
    int8_t* q = a.qs + r * a.k;
    for (int64_t b = 0; b < nb; ++b) {
      __m512 m = _mm512_setzero_ps();
      for (int g = 0; g < 16; ++g) m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(x + 256 * b + 16 * g)));
      float id;
      const float d = block_scale(_mm512_reduce_max_ps(m), &id);
      const __m512 idv = _mm512_set1_ps(id);
      for (int g = 0; g < 16; ++g) {
        const __m512i qg = quant16(_mm512_loadu_ps(x + 256 * b + 16 * g), idv);
        _mm512_mask_cvtepi32_storeu_epi8(q + 256 * b + 16 * g, 0xffff, qg);
        a.s[r * a.s_per_row + b * 16 + g] = _mm512_reduce_add_epi32(qg);
      }
      a.d[r * a.d_per_row + b] = d;
    }
  }
}

// Q8_0 rows one at a time, taken in turn from kQ8Streams evenly spaced ranges of [n0, n1): several
// weight streams in flight per core (one leaves DRAM bandwidth unused at small T), and each
// stream's row 8 ahead requested early (long rows of short blocks outrun the hardware prefetcher).
constexpr int64_t kQ8Streams = 4;

inline void cols_q8_0(const Job& j, int64_t n0, int64_t n1) {
  const int64_t nb = j.k / 32, per = (n1 - n0) / kQ8Streams;
  auto row = [&](int64_t n, int64_t end) {
    if (n + 8 < end) {
      const char* ahead = reinterpret_cast<const char*>(j.w + (n + 8) * j.wrow);
      for (size_t off = 0; off < j.wrow; off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
    }
    const uint8_t* wr = j.w + n * j.wrow;
    for (int64_t t = 0; t < j.t; ++t) j.y[t * j.n + n] = dot_q8_0_v(wr, xrow(j.act, t), nb);
  };
  for (int64_t i = 0; i < per; ++i)
    for (int64_t g = 0; g < kQ8Streams; ++g) row(n0 + g * per + i, n0 + (g + 1) * per);
  for (int64_t n = n0 + kQ8Streams * per; n < n1; ++n) row(n, n1);
}
