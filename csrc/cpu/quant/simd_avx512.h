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

// acc = (((acc + p0) + p1) + p2) + p3: the block order of the definition.
static inline float add_in_order(float acc, __m128 p) {
  acc = acc + _mm_cvtss_f32(p);
  acc = acc + _mm_cvtss_f32(_mm_movehdup_ps(p));
  acc = acc + _mm_cvtss_f32(_mm_movehl_ps(p, p));
  acc = acc + _mm_cvtss_f32(_mm_shuffle_ps(p, p, 3));
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
    acc = add_in_order(acc, _mm_mul_ps(_mm_cvtepi32_ps(i), s));
  }
  for (; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ8_0Bytes;
    acc = acc + float(idot_q8_0(blk, x.qs + b * 32)) * (h2f(rd16(blk)) * x.d[b]);
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
    acc = add_in_order(acc, _mm_mul_ps(_mm_cvtepi32_ps(i), s));
  }
  for (; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ4_0Bytes;
    acc = acc + float(idot_nib(blk + 2, x.qs + b * 32) - 8 * x.s[b]) * (h2f(rd16(blk)) * x.d[b]);
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
    __m128 t1 = _mm_mul_ps(_mm_cvtepi32_ps(sum_blocks_4x4(a)), _mm_mul_ps(load_h4(p, kQ4_1Bytes), dx));
    __m128 t2 = _mm_mul_ps(load_h4(p + 2, kQ4_1Bytes), _mm_mul_ps(dx, sx));
    acc = add_in_order(acc, _mm_add_ps(t1, t2));
  }
  for (; b < nb; ++b) {
    const uint8_t* blk = w + b * kQ4_1Bytes;
    int32_t i = idot_nib(blk + 4, x.qs + b * 32);
    acc = acc + (float(i) * (h2f(rd16(blk)) * x.d[b]) + h2f(rd16(blk + 2)) * (x.d[b] * float(x.s[b])));
  }
  return acc;
}
