// AVX-512 VNNI sub-block dots of K-quant blocks (unsigned quants x signed activations, exact);
// included before dot_generic.h in TUs compiled for AVX-512, replacing its portable loops.
// (No include guard: included once per ISA namespace.)
#define EYAS_KDOTS_DEFINED 1

// out[s] = q[32s..32s+32) . x[32s..32s+32) for s < 8.
static inline void kdots32(const uint8_t* q, const int8_t* x, int32_t* out) {
  const __m512i idx = _mm512_setr_epi32(0, 8, 2, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  for (int h = 0; h < 2; ++h) {
    const __m512i a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(q + 128 * h), _mm512_loadu_si512(x + 128 * h));
    const __m512i c = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(q + 128 * h + 64),
                                          _mm512_loadu_si512(x + 128 * h + 64));
    __m512i t = _mm512_add_epi32(_mm512_unpacklo_epi64(a, c), _mm512_unpackhi_epi64(a, c));
    t = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, _MM_PERM_CDAB));
    t = _mm512_add_epi32(t, _mm512_shuffle_i32x4(t, t, 0xB1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4 * h), _mm512_castsi512_si128(_mm512_permutexvar_epi32(idx, t)));
  }
}

// out[s] = q[16s..16s+16) . x[16s..16s+16) for s < 16.
static inline void kdots16(const uint8_t* q, const int8_t* x, int32_t* out) {
  const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  for (int i = 0; i < 4; ++i) {
    const __m512i a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(q + 64 * i), _mm512_loadu_si512(x + 64 * i));
    __m512i t = _mm512_add_epi32(a, _mm512_shuffle_epi32(a, _MM_PERM_BADC));
    t = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, _MM_PERM_CDAB));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4 * i), _mm512_castsi512_si128(_mm512_permutexvar_epi32(idx, t)));
  }
}

// Element-order unpacking of K-quant quants (see unpack_kblock in dot_generic.h for the layout).
#define EYAS_KUNPACK_DEFINED 1

// Q4_K / Q5_K: 128 nibble bytes (+ 32 high-bit bytes for Q5_K) -> q[256].
static inline void kunpack_q45(const uint8_t* qs, const uint8_t* qh, uint8_t* q) {
  const __m512i m4 = _mm512_set1_epi8(15);
  const __m256i h = qh ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh)) : _mm256_setzero_si256();
  for (int p = 0; p < 2; ++p) {  // 64 qs bytes = chunks c = 2p, 2p + 1
    const __m512i v = _mm512_loadu_si512(qs + 64 * p);
    const __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    __m512i o[2] = {_mm512_shuffle_i64x2(lo, hi, 0x44), _mm512_shuffle_i64x2(lo, hi, 0xEE)};
    if (qh) {
      for (int e = 0; e < 2; ++e) {  // chunk c: low nibbles take bit 2c of qh[l], high nibbles bit 2c + 1
        const int c = 2 * p + e;
        const uint64_t mlo = _mm256_test_epi8_mask(h, _mm256_set1_epi8(char(1 << (2 * c))));
        const uint64_t mhi = _mm256_test_epi8_mask(h, _mm256_set1_epi8(char(1 << (2 * c + 1))));
        o[e] = _mm512_mask_add_epi8(o[e], __mmask64(mlo | (mhi << 32)), o[e], _mm512_set1_epi8(16));
      }
    }
    _mm512_storeu_si512(q + 128 * p, o[0]);
    _mm512_storeu_si512(q + 128 * p + 64, o[1]);
  }
}

// Q6_K: ql[128], qh[64] -> q[256] (0..63).
static inline void kunpack_q6(const uint8_t* ql, const uint8_t* qh, uint8_t* q) {
  const __m512i m4 = _mm512_set1_epi8(15), m2 = _mm512_set1_epi8(3);
  for (int hf = 0; hf < 2; ++hf) {
    const __m512i l = _mm512_loadu_si512(ql + 64 * hf);
    const __m512i h = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh + 32 * hf)));
    const __m512i h01 = _mm512_inserti64x4(h, _mm512_castsi512_si256(_mm512_srli_epi16(h, 2)), 1);
    const __m512i h23 = _mm512_srli_epi16(h01, 4);
    const __m512i a = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_slli_epi16(_mm512_and_si512(h01, m2), 4));
    const __m512i b = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                                      _mm512_slli_epi16(_mm512_and_si512(h23, m2), 4));
    _mm512_storeu_si512(q + 128 * hf, a);
    _mm512_storeu_si512(q + 128 * hf + 64, b);
  }
}
