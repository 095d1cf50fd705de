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
