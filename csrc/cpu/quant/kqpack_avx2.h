// AVX2 on the repacked K-quant weights (q4pack.h: the layout the AVX-512 path reads), each 16-column
// group as two 8-lane halves (bytes 32h .. 32h + 31 of every 64-byte line are columns 8h .. 8h + 7), so
// a lane is one output column and no horizontal sums are needed. Included after q4pack_avx2.h (for
// bcast_dword, keep_in_register) and kquant_avx2.h (the GGUF-row path for the columns past the packed
// groups) in TUs compiled for AVX2.
//
// Exact integers, then kblock_term's float operations: vpmaddubsw multiplies u8 quants by s8
// activations into int16 pairs, summed in int16 while they cannot overflow (4-bit quants: a
// sub-block's 8 planes, <= 16 * 15 * 127 = 30480; Q5_K: 4 planes, <= 8 * 31 * 127 = 31496; Q6_K:
// 2 planes, <= 4 * 63 * 127 = 32004), then vpmaddwd against the sub-block scale as a word pair in
// each lane applies the scale and widens in one op (where the AVX-512 path multiplies int32 lanes).
// (No include guard: included once per ISA namespace.)

// The 8 u8 scales at p (one per column of a half) as a word pair (s, s) in each dword lane.
static inline __m256i kq2_scale_words(const uint8_t* p) {
  const __m256i x = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_or_si256(x, _mm256_slli_epi32(x, 16));
}

// Q6_K: sub-block g's signed scale in each lane as a word pair, from the half's 16 bytes of scale
// pairs (g / 2) at p: word g % 2 of each pair, sign bits kept as the low word's bit pattern.
static inline __m256i kq2_q6_scale_words(const uint8_t* p, int g) {
  const __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m256i x = g % 2 ? _mm256_srli_epi32(w, 16) : _mm256_and_si256(w, _mm256_set1_epi32(0xFFFF));
  return _mm256_or_si256(x, _mm256_slli_epi32(x, 16));
}

// Bit `bit` of every byte of v moved to bit 4 (Q5_K's fifth bits, as k5_fifth_bits).
static inline __m256i kq2_fifth_bits(__m256i v, int bit) {
  return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(v, bit), _mm256_set1_epi8(1)), 4);
}

// The quants of half hh of plane line `p` (and its qh line, Q5_K / Q6_K): the sub-block of the low
// nibbles or of the high ones. Q6_K planes: see k6_quants (e: which of the two qh bit pairs).
template <WKind K>
static inline __m256i kq2_quants(const uint8_t* line, const uint8_t* qh_line, bool high, int bit) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(line));
  __m256i q = high ? _mm256_and_si256(_mm256_srli_epi16(v, 4), m4) : _mm256_and_si256(v, m4);
  if constexpr (K == kQ5_K) {
    q = _mm256_or_si256(q, kq2_fifth_bits(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh_line)), bit));
  } else if constexpr (K == kQ6_K) {  // bits `bit`, bit + 1 of the qh byte to bits 4, 5
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh_line));
    q = _mm256_or_si256(q, _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(h, bit), 4), _mm256_set1_epi8(0x30)));
  }
  return q;
}

// Planes whose vpmaddubsw pairs are summed in int16 before vpmaddwd widens them (the bounds above).
template <WKind K>
constexpr int kq2_widen() { return K == kQ4_K ? 8 : K == kQ5_K ? 4 : 2; }

// Sub-block g's scale words (as kq2_scale_words) for half `half` of pack block s.
template <WKind K>
static inline __m256i kq2_sub_scale(const uint8_t* s, int g, int half) {
  if constexpr (K == kQ6_K) return kq2_q6_scale_words(s + kQ6PackScales + 32 * (g / 2) + 16 * half, g);
  else return kq2_scale_words(s + kpack_at(K).sc + 16 * g + 8 * half);
}

// kblock_term's float operations for half `half` of pack block s, one row at a time: given the row's
// scaled sub-block dots i1, Q4_K / Q5_K subtract the mins' term (mins . 32-sums), Q6_K takes the stored
// quants' + 32 out as 32 * (scales . 16-sums).
template <WKind K>
struct Kq2BlockTerm {
  const uint8_t* s;
  int half;
  __m256 dw, dmw;
  __m256i mw[4];
  Kq2BlockTerm(const uint8_t* blk, int h) : s(blk), half(h) {
    if constexpr (K == kQ6_K) {
      dw = dmw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + kQ6PackD + 16 * half)));
    } else {
      constexpr KPackAt at = kpack_at(K);
      dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + at.d + 16 * half)));
      dmw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + at.dmin + 16 * half)));
      for (int p = 0; p < 4; ++p)
        mw[p] = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + at.mn + 32 * p + 16 * half)));
    }
  }
  // pr: the row's activation sum pairs for this block (kq_sum_pairs); dx: its activation scale.
  __m256 operator()(const int32_t* pr, float dx, __m256i i1) const {
    const __m256 dxv = _mm256_set1_ps(dx);
    __m256i c = _mm256_setzero_si256();
    if constexpr (K == kQ6_K) {
      for (int p = 0; p < 8; ++p)
        c = _mm256_add_epi32(c, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + kQ6PackScales + 32 * p + 16 * half))),
                                                  _mm256_set1_epi32(pr[p])));
      const __m256i i = _mm256_sub_epi32(i1, _mm256_slli_epi32(c, 5));
      return _mm256_mul_ps(_mm256_cvtepi32_ps(i), _mm256_mul_ps(dw, dxv));
    } else {
      for (int p = 0; p < 4; ++p) c = _mm256_add_epi32(c, _mm256_madd_epi16(mw[p], _mm256_set1_epi32(pr[p])));
      return _mm256_sub_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(i1), _mm256_mul_ps(dw, dxv)),
                           _mm256_mul_ps(_mm256_cvtepi32_ps(c), _mm256_mul_ps(dmw, dxv)));
    }
  }
};

// Rows [0, RT) (2 <= RT <= 4) x both halves of the 16-column group at n, straight from the pack. Each sub-block's int16 pair
// sums go through vpmaddwd with its scale words into the block's int32 sums i1; the block's float term
// then follows kblock_term (as KqBlockTerm does on the AVX-512 path). Both halves in one pass share
// every activation broadcast (at T = 2 / 3 1.2x / 1.4x faster than a pass per half); the sub-blocks
// are unrolled so their shifts are immediates (cold 8192x2048, T = 2: Q6_K 760-772 -> 627-710 us,
// Q5_K 649-661 -> 564-627, Q4_K 426-455 -> 393-411; T = 3 / 4 even to 10 % faster).
template <WKind K, int RT>
static void kq2_rows(const Job& j, const int32_t* pairs, int64_t n) {
  constexpr int H = 2, G = kpack_sub_blocks(K);
  constexpr bool q6 = K == kQ6_K;
  constexpr int block_bytes = q6 ? kQ6KPackBlockBytes : kpack_at(K).bytes;
  constexpr int planes = 64 / kpack_sub_blocks(K);  // planes of one sub-block
  constexpr int widen = kq2_widen<K>();
  constexpr int pair_n = kq_pairs_per_block(K);
  const int64_t nb = j.k / 256;
  const uint8_t* src = j.wpack + size_t(n / 16) * size_t(nb) * block_bytes;
  const int8_t* xq0 = j.act.qs;
  __m256 acc[RT][H];
#pragma GCC unroll 8
  for (int t = 0; t < RT; ++t)
    for (int hh = 0; hh < H; ++hh) acc[t][hh] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* s = src + b * block_bytes;
#pragma GCC unroll 64
      for (int l = 0; l < (block_bytes + 63) / 64; ++l) _mm_prefetch(reinterpret_cast<const char*>(s + block_bytes + 64 * l), _MM_HINT_T1);
    const int8_t* xb = xq0 + b * 256;
    __m256i i1[RT][H];
#pragma GCC unroll 8
    for (int t = 0; t < RT; ++t)
      for (int hh = 0; hh < H; ++hh) i1[t][hh] = _mm256_setzero_si256();
#pragma GCC unroll 16
    for (int g = 0; g < G; ++g) {
      const KPackSub sub = kpack_sub(K, g);
      __m256i sw[H];
#pragma GCC unroll 2
      for (int hh = 0; hh < H; ++hh) {
        const int half = hh;
        sw[hh] = kq2_sub_scale<K>(s, g, half);
      }
      __m256i p16[RT][H];
#pragma GCC unroll 8
      for (int r = 0; r < planes; ++r) {
        if (r % widen == 0)
#pragma GCC unroll 8
          for (int t = 0; t < RT; ++t)
            for (int hh = 0; hh < H; ++hh) p16[t][hh] = _mm256_setzero_si256();
        __m256i q[H];
#pragma GCC unroll 2
        for (int hh = 0; hh < H; ++hh) {
          const int half = hh;
          q[hh] = kq2_quants<K>(s + sub.line + sub.stride * r + 32 * half, s + sub.qh + sub.qh_stride * r + 32 * half, sub.high, sub.bit);
        }
#pragma GCC unroll 8
        for (int t = 0; t < RT; ++t) {
          const __m256i xv = bcast_dword(xb + t * j.k + sub.act + 4 * r);
#pragma GCC unroll 2
          for (int hh = 0; hh < H; ++hh) {
            p16[t][hh] = _mm256_add_epi16(p16[t][hh], _mm256_maddubs_epi16(q[hh], xv));
            keep_in_register(p16[t][hh]);
          }
        }
        if ((r + 1) % widen == 0)
#pragma GCC unroll 8
          for (int t = 0; t < RT; ++t)
            for (int hh = 0; hh < H; ++hh) i1[t][hh] = _mm256_add_epi32(i1[t][hh], _mm256_madd_epi16(p16[t][hh], sw[hh]));
      }
    }
#pragma GCC unroll 2
    for (int hh = 0; hh < H; ++hh) {
      const Kq2BlockTerm<K> term(s, hh);
#pragma GCC unroll 8
      for (int t = 0; t < RT; ++t)
        acc[t][hh] = _mm256_add_ps(acc[t][hh], term(pairs + (t * nb + b) * pair_n, j.act.d[t * j.act.d_per_row + b], i1[t][hh]));
    }
  }
  for (int t = 0; t < RT; ++t)
    for (int hh = 0; hh < H; ++hh) _mm256_storeu_ps(j.y + t * j.n + n + 8 * hh, acc[t][hh]);
}

// Q4_K / Q5_K, one row (a decode step): the sub-block pair 2c, 2c + 1 (low and high nibbles of the same
// lines) together, both halves, c unrolled so Q5_K's fifth bits come out with immediate shifts. Cold,
// 2 threads, Intel VM, three alternating runs against kq2_rows: Q5_K 19.3-19.9 -> 21.3-24.1 GB/s, Q4_K
// 23.7-24.7 -> 23.8-26.0 (8192x2048, 2048x8192, 6144x1024).
template <WKind K>
static void kq2_q45_row1(const Job& j, const int32_t* pairs, int64_t n) {
  constexpr KPackAt at = kpack_at(K);
  constexpr int widen = kq2_widen<K>();
  const int64_t nb = j.k / 256;
  const uint8_t* src = j.wpack + size_t(n / 16) * size_t(nb) * at.bytes;
  const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* s = src + b * at.bytes;
#pragma GCC unroll 64
    for (int l = 0; l < (at.bytes + 63) / 64; ++l) _mm_prefetch(reinterpret_cast<const char*>(s + at.bytes + 64 * l), _MM_HINT_T1);
    const int8_t* xb = j.act.qs + b * 256;
    __m256i i1[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      __m256i sl[2], sh[2], pl[2], ph[2];
#pragma GCC unroll 2
      for (int hh = 0; hh < 2; ++hh) sl[hh] = kq2_sub_scale<K>(s, 2 * c, hh), sh[hh] = kq2_sub_scale<K>(s, 2 * c + 1, hh);
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r) {
        if (r % widen == 0)
          for (int hh = 0; hh < 2; ++hh) pl[hh] = ph[hh] = _mm256_setzero_si256();
        const __m256i xl = bcast_dword(xb + 64 * c + 4 * r), xh = bcast_dword(xb + 64 * c + 32 + 4 * r);
#pragma GCC unroll 2
        for (int hh = 0; hh < 2; ++hh) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + kpack_ql(K, c, r) + 32 * hh));
          __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
          if constexpr (K == kQ5_K) {  // bits 2c (low nibbles) and 2c + 1 (high) of the qh byte, to bit 4
            const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + kpack_qh(r) + 32 * hh));
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * c), one), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * c + 1), one), 4));
          }
          pl[hh] = _mm256_add_epi16(pl[hh], _mm256_maddubs_epi16(lo, xl));
          ph[hh] = _mm256_add_epi16(ph[hh], _mm256_maddubs_epi16(hi, xh));
          keep_in_register(pl[hh]);
          keep_in_register(ph[hh]);
        }
        if ((r + 1) % widen == 0)
#pragma GCC unroll 2
          for (int hh = 0; hh < 2; ++hh)
            i1[hh] = _mm256_add_epi32(i1[hh], _mm256_add_epi32(_mm256_madd_epi16(pl[hh], sl[hh]), _mm256_madd_epi16(ph[hh], sh[hh])));
      }
    }
#pragma GCC unroll 2
    for (int hh = 0; hh < 2; ++hh) {
      const Kq2BlockTerm<K> term(s, hh);
      acc[hh] = _mm256_add_ps(acc[hh], term(pairs + b * kq_pairs_per_block(K), j.act.d[b], i1[hh]));
    }
  }
  for (int hh = 0; hh < 2; ++hh) _mm256_storeu_ps(j.y + n + 8 * hh, acc[hh]);
}

// Q6_K, one row (a decode step): sub-blocks 8h + 2e + rr (low nibbles) and + 4 (high) together, both
// halves, so each plane's ql and qh lines are loaded once and the qh bit pairs taken out with
// immediate shifts (kq2_rows unpacks every sub-block on its own). Cold, 2 threads, Intel VM, three
// alternating runs at 8192x2048, 2048x8192, 151936x1024, 1024x3072: 17.1-20.5 -> 27.1-28.5 GB/s.
static void kq2_q6_row1(const Job& j, const int32_t* pairs, int64_t n) {
  const int64_t nb = j.k / 256;
  const uint8_t* src = j.wpack + size_t(n / 16) * size_t(nb) * kQ6KPackBlockBytes;
  const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* s = src + b * kQ6KPackBlockBytes;
#pragma GCC unroll 64
    for (int l = 0; l < (kQ6KPackBlockBytes + 63) / 64; ++l)
      _mm_prefetch(reinterpret_cast<const char*>(s + kQ6KPackBlockBytes + 64 * l), _MM_HINT_T1);
    const int8_t* xb = j.act.qs + b * 256;
    __m256i i1[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 1
    for (int h6 = 0; h6 < 2; ++h6)
#pragma GCC unroll 2
      for (int e = 0; e < 2; ++e)
#pragma GCC unroll 1
        for (int rr = 0; rr < 2; ++rr) {
          const int g = 8 * h6 + 2 * e + rr;  // the low nibbles' sub-block; the high ones' is g + 4

          const int8_t* xa = xb + 128 * h6 + 32 * e + 16 * rr;
          __m256i sl[2], sh[2], pl[2], ph[2];
#pragma GCC unroll 2
          for (int hh = 0; hh < 2; ++hh) {
            sl[hh] = kq2_q6_scale_words(s + kQ6PackScales + 32 * (g / 2) + 16 * hh, g);
            sh[hh] = kq2_q6_scale_words(s + kQ6PackScales + 32 * ((g + 4) / 2) + 16 * hh, g + 4);
          }
#pragma GCC unroll 4
          for (int r = 0; r < 4; ++r) {
            if (r % 2 == 0)
              for (int hh = 0; hh < 2; ++hh) pl[hh] = ph[hh] = _mm256_setzero_si256();
            const __m256i xl = bcast_dword(xa + 4 * r), xh = bcast_dword(xa + 64 + 4 * r);
#pragma GCC unroll 2
            for (int hh = 0; hh < 2; ++hh) {
              const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + q6pack_ql(h6, e, 4 * rr + r) + 32 * hh));
              const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + q6pack_qh(h6, 4 * rr + r) + 32 * hh));
              // bits 2e, 2e + 1 of the qh byte to bits 4, 5 (low nibbles), bits 4 + 2e, 5 + 2e (high)
              const __m256i lo = _mm256_or_si256(_mm256_and_si256(v, m4),
                                                 _mm256_and_si256(e ? _mm256_slli_epi16(hb, 2) : _mm256_slli_epi16(hb, 4), m30));
              const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4),
                                                 _mm256_and_si256(e ? _mm256_srli_epi16(hb, 2) : hb, m30));
              pl[hh] = _mm256_add_epi16(pl[hh], _mm256_maddubs_epi16(lo, xl));
              ph[hh] = _mm256_add_epi16(ph[hh], _mm256_maddubs_epi16(hi, xh));
              keep_in_register(pl[hh]);
              keep_in_register(ph[hh]);
            }
            if (r % 2 == 1)
#pragma GCC unroll 2
              for (int hh = 0; hh < 2; ++hh)
                i1[hh] = _mm256_add_epi32(i1[hh], _mm256_add_epi32(_mm256_madd_epi16(pl[hh], sl[hh]), _mm256_madd_epi16(ph[hh], sh[hh])));
          }
        }
#pragma GCC unroll 2
    for (int hh = 0; hh < 2; ++hh) {
      const Kq2BlockTerm<kQ6_K> term(s, hh);
      acc[hh] = _mm256_add_ps(acc[hh], term(pairs + b * kq_pairs_per_block(kQ6_K), j.act.d[b], i1[hh]));
    }
  }
  for (int hh = 0; hh < 2; ++hh) _mm256_storeu_ps(j.y + n + 8 * hh, acc[hh]);
}

// Many rows: a 16-column group's quants are unpacked once into u8 planes (plane p of block b, half h
// at planes + (64 b + p) * 64 + 32 h) beside each sub-block's scale words (sw[(b G + g) * 2 + h]), so a
// pass of rows is broadcasts, vpmaddubsw and the widening only (Q6_K re-unpacked its two bit planes
// for every pass: ~7 ops per 32 quants). Same integers, same float terms.
// From 5 rows; below, one pass over both halves of the packed group (cold 8192x2048, 2 threads, Intel
// VM with the AVX2 table: at T = 4 Q6_K 1,019-1,070 us against 1,332-1,339 unpacked, at 6 even, from
// 8 the unpacked passes ahead: Q6_K 1,872-1,882 against 2,237-2,470).
constexpr int64_t kq2_unpack_min_rows = 5;

template <WKind K>
static void kq2_unpack_group(const uint8_t* src, int64_t nb, uint8_t* planes, __m256i* sw) {
  constexpr int G = kpack_sub_blocks(K), P = 64 / G;
  constexpr int block_bytes = K == kQ6_K ? kQ6KPackBlockBytes : kpack_at(K).bytes;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* s = src + b * block_bytes;
#pragma GCC unroll 64
    for (int l = 0; l < (block_bytes + 63) / 64; ++l) _mm_prefetch(reinterpret_cast<const char*>(s + block_bytes + 64 * l), _MM_HINT_T1);
    for (int g = 0; g < G; ++g) {
      const KPackSub sub = kpack_sub(K, g);
      for (int h = 0; h < 2; ++h) {
        sw[(b * G + g) * 2 + h] = kq2_sub_scale<K>(s, g, h);
#pragma GCC unroll 8
        for (int r = 0; r < P; ++r)
          _mm256_store_si256(reinterpret_cast<__m256i*>(planes + (b * 64 + P * g + r) * 64 + 32 * h),
                             kq2_quants<K>(s + sub.line + sub.stride * r + 32 * h, s + sub.qh + sub.qh_stride * r + 32 * h, sub.high, sub.bit));
      }
    }
  }
}

// Rows [r0, r0 + RT) x half h of the unpacked group (planes, sw); src: the group's pack (its float terms).
template <WKind K, int RT>
static void kq2_rows_unpacked(const Job& j, const int32_t* pairs, const uint8_t* src, const uint8_t* planes,
                              const __m256i* sw, int64_t n, int h, int64_t r0) {
  constexpr int G = kpack_sub_blocks(K), P = 64 / G, widen = kq2_widen<K>(), pair_n = kq_pairs_per_block(K);
  constexpr int block_bytes = K == kQ6_K ? kQ6KPackBlockBytes : kpack_at(K).bytes;
  const int64_t nb = j.k / 256;
  const int8_t* xq0 = j.act.qs + r0 * j.k;
  __m256 acc[RT];
#pragma GCC unroll 8
  for (int t = 0; t < RT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* xb = xq0 + b * 256;
    __m256i i1[RT];
#pragma GCC unroll 8
    for (int t = 0; t < RT; ++t) i1[t] = _mm256_setzero_si256();
#pragma GCC unroll 1
    for (int g = 0; g < G; ++g) {
      const int act = kpack_sub(K, g).act;
      __m256i p16[RT];
#pragma GCC unroll 8
      for (int r = 0; r < P; ++r) {
        if (r % widen == 0)
#pragma GCC unroll 8
          for (int t = 0; t < RT; ++t) p16[t] = _mm256_setzero_si256();
        const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(planes + (b * 64 + P * g + r) * 64 + 32 * h));
#pragma GCC unroll 8
        for (int t = 0; t < RT; ++t) {
          p16[t] = _mm256_add_epi16(p16[t], _mm256_maddubs_epi16(w, bcast_dword(xb + t * j.k + act + 4 * r)));
          keep_in_register(p16[t]);
        }
        if ((r + 1) % widen == 0) {
          const __m256i scw = _mm256_load_si256(sw + (b * G + g) * 2 + h);
#pragma GCC unroll 8
          for (int t = 0; t < RT; ++t) i1[t] = _mm256_add_epi32(i1[t], _mm256_madd_epi16(p16[t], scw));
        }
      }
    }
    const Kq2BlockTerm<K> term(src + b * block_bytes, h);
#pragma GCC unroll 8
    for (int t = 0; t < RT; ++t)
      acc[t] = _mm256_add_ps(acc[t], term(pairs + ((r0 + t) * nb + b) * pair_n, j.act.d[(r0 + t) * j.act.d_per_row + b], i1[t]));
  }
  for (int t = 0; t < RT; ++t) _mm256_storeu_ps(j.y + (r0 + t) * j.n + n + 8 * h, acc[t]);
}

// The AVX2 table's K-quant path at every T over the pack: up to 4 rows read both halves of a group in
// one pass (one row: a sub-block pair at a time); from 5 rows the group is unpacked once first. Columns past N / 16 * 16, and every column
// without a pack, on the GGUF path.
template <WKind K>
void cols_kq_packed_avx2(const Job& j, int64_t n0, int64_t n1) {
  const int64_t full = j.wpack ? n0 + (n1 - n0) / 16 * 16 : n0;
  if (full > n0) {
    const int32_t* pairs = kq_sum_pairs<K>(j);
    const int64_t nb = j.k / 256;
    constexpr int block_bytes = K == kQ6_K ? kQ6KPackBlockBytes : kpack_at(K).bytes;
    if (j.t >= kq2_unpack_min_rows) {
      constexpr int G = kpack_sub_blocks(K);
      uint8_t* planes = thread_scratch<kScratchUnpacked>(size_t(nb) * (4096 + 64 * G));
      __m256i* sw = reinterpret_cast<__m256i*>(planes + size_t(nb) * 4096);
      for (int64_t n = n0; n < full; n += 16) {
        const uint8_t* src = j.wpack + size_t(n / 16) * size_t(nb) * block_bytes;
        kq2_unpack_group<K>(src, nb, planes, sw);
        for (int h = 0; h < 2; ++h) {
          int64_t r = 0;
          for (; r + 4 <= j.t; r += 4) kq2_rows_unpacked<K, 4>(j, pairs, src, planes, sw, n, h, r);
          switch (j.t - r) {
            case 3: kq2_rows_unpacked<K, 3>(j, pairs, src, planes, sw, n, h, r); break;
            case 2: kq2_rows_unpacked<K, 2>(j, pairs, src, planes, sw, n, h, r); break;
            case 1: kq2_rows_unpacked<K, 1>(j, pairs, src, planes, sw, n, h, r); break;
            default: break;
          }
        }
      }
    } else {
      for (int64_t n = n0; n < full; n += 16) switch (j.t) {
          case 4: kq2_rows<K, 4>(j, pairs, n); break;
          case 3: kq2_rows<K, 3>(j, pairs, n); break;
          case 2: kq2_rows<K, 2>(j, pairs, n); break;
          default:  // one row
            if constexpr (K == kQ6_K) kq2_q6_row1(j, pairs, n);
            else kq2_q45_row1<K>(j, pairs, n);
            break;
        }
    }
  }
  if (full < n1) cols_kquant_v<K>(j, full, n1);  // after: it reuses the kernel scratch
}
