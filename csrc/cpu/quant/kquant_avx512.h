// AVX-512 (VNNI) K-quant columns (Q4_K, Q5_K, Q6_K) on the GGUF layout; included after
// kdots_avx512.h, dot_generic.h and simd_avx512.h in TUs compiled for AVX-512 VNNI.
// Each block's integers are exact (vpmaddubsw pairs, then vpdpwssd with the sub-block scales as
// words: pair sums of 6-bit quants times int8 activations fit int16), so any order of integer
// sums gives dot_generic.h's i1 / i2; the float epilogue runs kblock_term's operations, per
// block, and adds the blocks in order. Blocks go in groups of 4 so one transpose-and-add tree
// reduces 4 blocks' vectors at once; each group is unpacked once and reused by every row.
// (No include guard: included once per ISA namespace.)

// Up to 4 unpacked blocks of one weight row.
struct KGroup4 {
  alignas(64) uint8_t q[4][256];     // quants in element order (kunpack_*)
  alignas(64) int16_t sc[4][4][32];  // per block and 64-element vector: each word pair's scale
  alignas(64) int16_t sw[4][16];     // Q4/5_K: mins, word 2j and 2j + 1 = min j; Q6_K: the 16 scales
  alignas(16) float d[4], dmin[4];
};

// [sum(a0), sum(a1), sum(a2), sum(a3)] of 16 int32 lanes each.
static inline __m128i ksum4(__m512i a0, __m512i a1, __m512i a2, __m512i a3) {
  const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(a0, a1), _mm512_unpackhi_epi32(a0, a1));
  const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(a2, a3), _mm512_unpackhi_epi32(a2, a3));
  const __m512i u = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
  const __m256i v = _mm256_add_epi32(_mm512_castsi512_si256(u), _mm512_extracti64x4_epi64(u, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
}

// acc + p[0] + ... + p[n - 1], one lane at a time (n <= 4): the block order of the definition.
static inline float add_in_order_n(float acc, __m128 p, int n) {
  alignas(16) float v[4];
  _mm_store_ps(v, p);
  for (int i = 0; i < n; ++i) acc = acc + v[i];
  return acc;
}

// Q4_K / Q5_K: 12 scale bytes -> 8 six-bit scales (low 8 bytes) and 8 mins (high), as kquant_scales.
static inline __m128i kscales_minmax(const uint8_t* p) {
  alignas(16) uint32_t w[4];
  kquant_scales_words(p, w);
  return _mm_load_si128(reinterpret_cast<const __m128i*>(w));
}

template <WKind K>
static inline void kgroup_unpack(const uint8_t* blk, int i, KGroup4& g) {
  if constexpr (K == kQ6_K) {
    kunpack_q6(blk, blk + 128, g.q[i]);
    const __m512i s16 = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192))));
    _mm256_store_si256(reinterpret_cast<__m256i*>(g.sw[i]), _mm512_castsi512_si256(s16));
    for (int z = 0; z < 4; ++z) {  // words of vector z: sub-blocks 4z .. 4z + 3, 8 words each
      const __m512i idx = _mm512_add_epi16(_mm512_set1_epi16(short(4 * z)), _mm512_srli_epi16(
          _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), 3));
      _mm512_store_si512(g.sc[i][z], _mm512_permutexvar_epi16(idx, s16));
    }
    g.d[i] = H2F(rd16(blk + 208));
    g.dmin[i] = 0.0f;
  } else {
    kunpack_q45(blk + (K == kQ5_K ? 48 : 16), K == kQ5_K ? blk + 16 : nullptr, g.q[i]);
    const __m512i w = _mm512_cvtepu8_epi16(_mm256_castsi128_si256(kscales_minmax(blk + 4)));  // sc0..7 mn0..7
    for (int z = 0; z < 4; ++z) {  // vector z: sub-blocks 2z (words 0..15) and 2z + 1
      const __m512i idx = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(short(2 * z)), _mm512_set1_epi16(short(2 * z + 1)));
      _mm512_store_si512(g.sc[i][z], _mm512_permutexvar_epi16(idx, w));
    }
    const __m512i midx = _mm512_add_epi16(_mm512_set1_epi16(8), _mm512_srli_epi16(
        _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), 1));
    _mm256_store_si256(reinterpret_cast<__m256i*>(g.sw[i]), _mm512_castsi512_si256(_mm512_permutexvar_epi16(midx, w)));
    g.d[i] = H2F(rd16(blk));
    g.dmin[i] = H2F(rd16(blk + 2));
  }
}

// The n (<= 4) blocks of group g against activation row (xq, xs16: per-16 sums as words, xd),
// starting at block b; returns acc with the blocks' terms added in order.
template <WKind K>
static inline float kgroup_row(const KGroup4& g, int n, const int8_t* xq, const int16_t* xs16, const float* xd, float acc) {
  __m512i a[4], m[4];
  for (int i = 0; i < 4; ++i) a[i] = m[i] = _mm512_setzero_si512();
  for (int i = 0; i < n; ++i) {
    __m512i s = _mm512_setzero_si512();
    for (int z = 0; z < 4; ++z) {
      const __m512i p = _mm512_maddubs_epi16(_mm512_load_si512(g.q[i] + 64 * z), _mm512_loadu_si512(xq + 256 * i + 64 * z));
      s = _mm512_dpwssd_epi32(s, p, _mm512_load_si512(g.sc[i][z]));
    }
    // sum over 16-sums of scale (or min) words times activation sums
    const __m256i c = _mm256_madd_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(g.sw[i])),
                                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs16 + 16 * i)));
    if constexpr (K == kQ6_K) {
      s = _mm512_sub_epi32(s, _mm512_zextsi256_si512(_mm256_slli_epi32(c, 5)));  // quants are stored + 32
    } else {
      m[i] = _mm512_zextsi256_si512(c);
    }
    a[i] = s;
  }
  const __mmask8 kn = __mmask8((1u << n) - 1);
  const __m128 dx = _mm_maskz_loadu_ps(kn, xd);
  const __m128 p1 = _mm_mul_ps(_mm_cvtepi32_ps(ksum4(a[0], a[1], a[2], a[3])), _mm_mul_ps(_mm_load_ps(g.d), dx));
  if constexpr (K == kQ6_K) return add_in_order_n(acc, p1, n);
  const __m128 p2 = _mm_mul_ps(_mm_cvtepi32_ps(ksum4(m[0], m[1], m[2], m[3])), _mm_mul_ps(_mm_load_ps(g.dmin), dx));
  return add_in_order_n(acc, _mm_sub_ps(p1, p2), n);
}

// A weight row is unpacked whole first, then each activation row runs over it: rows in the inner
// loop would read blocks of T rows K bytes apart, which share few L1 sets (at K = 2048, T = 32
// took ~10x the T = 8 time).
template <WKind K>
void cols_kquant_v(const Job& j, int64_t n0, int64_t n1) {
  constexpr int bytes = K == kQ4_K ? kQ4_KBytes : K == kQ5_K ? kQ5_KBytes : kQ6_KBytes;
  const int64_t nb = j.k / 256, ng = (nb + 3) / 4, per = j.k / 16;
  const int16_t* s16 = ksums16(j);
  KGroup4* g = reinterpret_cast<KGroup4*>(thread_scratch<kScratchUnpacked>(size_t(ng) * sizeof(KGroup4)));
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* wr = j.w + n * j.wrow;
    if (n + 2 < n1)  // the row after next, early: rows are short next to the work per byte
      for (size_t off = 0; off < j.wrow; off += 64) _mm_prefetch(reinterpret_cast<const char*>(wr + 2 * j.wrow + off), _MM_HINT_T0);
    for (int64_t b = 0; b < nb; b += 4) {
      const int cnt = int(nb - b < 4 ? nb - b : 4);
      for (int i = 0; i < cnt; ++i) kgroup_unpack<K>(wr + (b + i) * bytes, i, g[b / 4]);
      for (int i = cnt; i < 4; ++i) g[b / 4].d[i] = g[b / 4].dmin[i] = 0.0f;
    }
    for (int64_t t = 0; t < j.t; ++t) {
      float y = 0.0f;
      for (int64_t b = 0; b < nb; b += 4)
        y = kgroup_row<K>(g[b / 4], int(nb - b < 4 ? nb - b : 4), j.act.qs + t * j.k + b * 256, s16 + t * per + b * 16,
                          j.act.d + t * j.act.d_per_row + b, y);
      j.y[t * j.n + n] = y;
    }
  }
}
