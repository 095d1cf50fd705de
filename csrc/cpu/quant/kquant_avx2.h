// AVX2 K-quant columns (Q4_K, Q5_K, Q6_K) on the GGUF layout; included after dot_generic.h in
// TUs compiled for AVX2. Each block's integers are exact (vpmaddubsw pairs of 6-bit quants times
// int8 activations fit int16; vpmaddwd with the sub-block scales as words), so any order of
// integer sums gives dot_generic.h's i1 / i2, and the float epilogue is kblock_term's. A weight
// row is unpacked once per call and reused by every activation row.
// (No include guard: included once per ISA namespace.)

// One unpacked block: quants in element order, per 32-element vector each word pair's scale.
struct KBlock8 {
  alignas(32) uint8_t q[256];
  alignas(32) int16_t sc[8][16];
  alignas(32) int16_t sw[16];  // Q4/5_K: mins, word 2j and 2j + 1 = min j; Q6_K: the 16 scales
  float d, dmin;
};

static inline __m256i ld256u(const void* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
static inline void st256(void* p, __m256i v) { _mm256_store_si256(reinterpret_cast<__m256i*>(p), v); }

// Bits [shift, shift + 2) of every byte of v, moved to bits 4..5 (width 1: bit 4 only).
template <int Width>
static inline __m256i khigh_bits(__m256i v, int shift) {
  const __m256i m = _mm256_set1_epi8(char((1 << Width) - 1));
  return _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(shift)), m), 4);
}

template <WKind K>
static inline void kblock8_unpack(const uint8_t* blk, KBlock8& u) {
  const __m256i m4 = _mm256_set1_epi8(15);
  if constexpr (K == kQ6_K) {
    for (int h = 0; h < 2; ++h) {  // element 128h + 32i + l: ql nibble and qh bit pair i (see unpack_kblock)
      const __m256i l0 = ld256u(blk + 64 * h), l1 = ld256u(blk + 64 * h + 32), qh = ld256u(blk + 128 + 32 * h);
      uint8_t* q = u.q + 128 * h;
      st256(q, _mm256_or_si256(_mm256_and_si256(l0, m4), khigh_bits<2>(qh, 0)));
      st256(q + 32, _mm256_or_si256(_mm256_and_si256(l1, m4), khigh_bits<2>(qh, 2)));
      st256(q + 64, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), khigh_bits<2>(qh, 4)));
      st256(q + 96, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), khigh_bits<2>(qh, 6)));
    }
    const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
    for (int z = 0; z < 8; ++z)  // vector z: sub-blocks 2z, 2z + 1 (8 words each)
      st256(u.sc[z], _mm256_setr_m128i(_mm_set1_epi16(sc[2 * z]), _mm_set1_epi16(sc[2 * z + 1])));
    st256(u.sw, _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc))));
    u.d = H2F(rd16(blk + 208));
  } else {
    const uint8_t* qs = blk + (K == kQ5_K ? 48 : 16);
    const __m256i qh = ld256u(blk + 16);
    for (int c = 0; c < 4; ++c) {  // element 64c + l: low nibble of qs[32c + l]; 64c + 32 + l: high nibble
      const __m256i v = ld256u(qs + 32 * c);
      __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
      if constexpr (K == kQ5_K) {
        lo = _mm256_or_si256(lo, khigh_bits<1>(qh, 2 * c));
        hi = _mm256_or_si256(hi, khigh_bits<1>(qh, 2 * c + 1));
      }
      st256(u.q + 64 * c, lo);
      st256(u.q + 64 * c + 32, hi);
    }
    uint32_t w[4];
    kquant_scales_words(blk + 4, w);
    uint8_t b[16];
    std::memcpy(b, w, 16);
    for (int z = 0; z < 8; ++z) st256(u.sc[z], _mm256_set1_epi16(b[z]));
    for (int j = 0; j < 16; ++j) u.sw[j] = b[8 + j / 2];
    u.d = H2F(rd16(blk));
    u.dmin = H2F(rd16(blk + 2));
  }
}

static inline int32_t khsum8(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// kblock_term for one unpacked block and one activation row (xq: 256 quants, xs16: 16 sums, dx).
template <WKind K>
static inline float kblock8_term(const KBlock8& u, const int8_t* xq, const int16_t* xs16, float dx) {
  __m256i a = _mm256_setzero_si256();
  for (int z = 0; z < 8; ++z) {
    const __m256i p = _mm256_maddubs_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(u.q + 32 * z)), ld256u(xq + 32 * z));
    a = _mm256_add_epi32(a, _mm256_madd_epi16(p, _mm256_load_si256(reinterpret_cast<const __m256i*>(u.sc[z]))));
  }
  const __m256i c = _mm256_madd_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(u.sw)), ld256u(xs16));
  if constexpr (K == kQ6_K) return float(khsum8(_mm256_sub_epi32(a, _mm256_slli_epi32(c, 5)))) * (u.d * dx);
  return float(khsum8(a)) * (u.d * dx) - float(khsum8(c)) * (u.dmin * dx);
}

// A weight row is unpacked whole first, then each activation row runs over it: rows in the inner
// loop would read blocks of T rows K bytes apart, which share few L1 sets (at K = 2048, T = 32
// took ~9x the T = 8 time).
template <WKind K>
void cols_kquant_v(const Job& j, int64_t n0, int64_t n1) {
  constexpr int bytes = K == kQ4_K ? kQ4_KBytes : K == kQ5_K ? kQ5_KBytes : kQ6_KBytes;
  const int64_t nb = j.k / 256, per = j.k / 16;
  const int16_t* s16 = ksums16(j);
  KBlock8* u = reinterpret_cast<KBlock8*>(thread_scratch<kScratchUnpacked>(size_t(nb) * sizeof(KBlock8)));
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* wr = j.w + n * j.wrow;
    if (n + 2 < n1)  // the row after next, early: rows are short next to the work per byte
      for (size_t off = 0; off < j.wrow; off += 64) _mm_prefetch(reinterpret_cast<const char*>(wr + 2 * j.wrow + off), _MM_HINT_T0);
    for (int64_t b = 0; b < nb; ++b) kblock8_unpack<K>(wr + b * bytes, u[b]);
    for (int64_t t = 0; t < j.t; ++t) {
      float y = 0.0f;
      for (int64_t b = 0; b < nb; ++b)
        y = y + kblock8_term<K>(u[b], j.act.qs + t * j.k + b * 256, s16 + t * per + b * 16, j.act.d[t * j.act.d_per_row + b]);
      j.y[t * j.n + n] = y;
    }
  }
}
