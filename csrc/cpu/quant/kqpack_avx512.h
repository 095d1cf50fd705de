// AVX-512 VNNI on the repacked K-quant weights (q4pack.h), included after q4pack_avx512.h and
// kquant_avx512.h in TUs compiled for AVX-512 VNNI. As for the Q4 pack, vpdpbusd against a
// broadcast activation dword gives 16 rows' sub-block dots in 16 lanes (no horizontal sums); the
// sub-block scales multiply them as int32 (vpmulld) and the mins meet the activation sums with
// vpdpwssd, all exact, so i1 and i2 are dot_generic.h's integers; the float epilogue is
// kblock_term's per block, added in block order.
// (No include guard: included once per ISA namespace.)

// Per call: activation sums as two int16 in one dword, [row][block][p], matching the packed
// word pairs: Q4_K / Q5_K the 32-element sums of sub-blocks 2p, 2p + 1 (p < 4), Q6_K the
// 16-element sums 2p, 2p + 1 (p < 8).
template <WKind K>
static inline int32_t* kq_sum_pairs(const Job& j) {
  constexpr int P = K == kQ6_K ? 8 : 4, per = 8 / P;  // per: 16-sums in one half of a pair
  const int64_t nb = j.k / 256;
  int32_t* out = reinterpret_cast<int32_t*>(thread_scratch<kScratchKernel>(size_t(j.t * nb * P) * 4 + 64));
  for (int64_t t = 0; t < j.t; ++t)
    for (int64_t b = 0; b < nb; ++b) {
      const int32_t* s = j.act.s + t * j.act.s_per_row + b * 16;
      for (int p = 0; p < P; ++p) {
        int32_t lo = 0, hi = 0;
        for (int q = 0; q < per; ++q) lo += s[2 * per * p + q], hi += s[2 * per * p + per + q];
        out[(t * nb + b) * P + p] = int32_t(uint32_t(uint16_t(int16_t(lo))) | (uint32_t(uint16_t(int16_t(hi))) << 16));
      }
    }
  return out;
}

// Requests the pack block after the one at p (Bytes long) into L2 while this one computes. One
// stream per core with this prefetch streams faster than several (the Q4 pack path's kQ4Streams):
// 8192x2048 cold at T = 1, 1 thread, Zen 5: Q4_K 25-30 GB/s against 15-26, Q6_K 28-30 against 17.
// Into L1, the 44-53 requests of a Q5_K or Q6_K block stalled the stream on Zen 4 (cold, 1 / 2 threads:
// Q6_K 7.4-7.6 / 12.5 -> 16-17 / 18-22 GB/s, Q5_K 8-13 / 13-15 -> 15-20 / 21-28), and Q4_K's on an Intel
// Xeon (bench_matmul cold, 2 threads, 16384x2048 T = 1 / 8: 851-861 / 1,428-1,678 -> 686-750 /
// 1,243-1,295 us; SmolLM2-1.7B Q4_K_M decode step 43.5-44.4 -> 41.4-43.6 ms), where Zen 4 had it even.
template <int Bytes>
static inline void kq_prefetch_next(const uint8_t* p) {
#pragma GCC unroll 64
  for (int l = 0; l < (Bytes + 63) / 64; ++l) _mm_prefetch(reinterpret_cast<const char*>(p + Bytes + 64 * l), _MM_HINT_T1);
}

// Q4_K / Q5_K: RT rows x the 16 columns from n.
template <WKind K, int RT>
static void k45_rows(const Job& j, const int32_t* pairs, int64_t n, int64_t r0) {
  constexpr KPackAt at = kpack_at(K);
  const int64_t nb = j.k / 256;
  const uint8_t* src = j.wpack + size_t(n / 16) * size_t(nb) * at.bytes;
  const __m512i m4 = _mm512_set1_epi8(0x0F), one = _mm512_set1_epi8(1);
  const uint8_t* xq0 = reinterpret_cast<const uint8_t*>(j.act.qs + r0 * j.k);
  __m512 acc[RT];
#pragma GCC unroll 16
  for (int t = 0; t < RT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* s = src + b * at.bytes;
    kq_prefetch_next<at.bytes>(s);
    __m512i i1[RT];
#pragma GCC unroll 16
    for (int t = 0; t < RT; ++t) i1[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      __m512i dl[RT], dh[RT];
#pragma GCC unroll 16
      for (int t = 0; t < RT; ++t) dl[t] = dh[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r) {
        const __m512i v = _mm512_loadu_si512(s + 512 * c + 64 * r);
        // Q4_K: the high nibbles in place (16 x their value), the products' sums shifted down once per
        // c below, exactly (8 dots of 4 products stay far inside int32): one vector op less per line.
        __m512i lo = _mm512_and_si512(v, m4),
                hi = K == kQ5_K ? _mm512_and_si512(_mm512_srli_epi16(v, 4), m4) : _mm512_andnot_si512(m4, v);
        if constexpr (K == kQ5_K) {  // fifth bits 2c, 2c + 1 of the qh plane, to bit 4 (per byte)
          const __m512i h = _mm512_loadu_si512(s + at.qh + 64 * r);
          lo = _mm512_or_si512(lo, _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, 2 * c), one), 4));
          hi = _mm512_or_si512(hi, _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, 2 * c + 1), one), 4));
        }
#pragma GCC unroll 16
        for (int t = 0; t < RT; ++t) {
          const uint8_t* xq = xq0 + t * j.k + b * 256 + 64 * c + 4 * r;
          dl[t] = dpbusd_bcast(dl[t], lo, xq);
          dh[t] = dpbusd_bcast(dh[t], hi, xq + 32);
        }
      }
      if constexpr (K != kQ5_K)
#pragma GCC unroll 16
        for (int t = 0; t < RT; ++t) dh[t] = _mm512_srai_epi32(dh[t], 4);
      const __m512i scl = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + at.sc + 32 * c)));
      const __m512i sch = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + at.sc + 16 + 32 * c)));
#pragma GCC unroll 16
      for (int t = 0; t < RT; ++t)
        i1[t] = _mm512_add_epi32(i1[t], _mm512_add_epi32(_mm512_mullo_epi32(dl[t], scl), _mm512_mullo_epi32(dh[t], sch)));
    }
    __m512i mw[4];
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) mw[p] = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + at.mn + 32 * p)));
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + at.d)));
    const __m512 dmw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + at.dmin)));
#pragma GCC unroll 16
    for (int t = 0; t < RT; ++t) {
      const int32_t* pr = pairs + ((r0 + t) * nb + b) * 4;
      __m512i i2 = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) i2 = _mm512_dpwssd_epi32(i2, mw[p], _mm512_set1_epi32(pr[p]));
      const __m512 dx = _mm512_set1_ps(j.act.d[(r0 + t) * j.act.d_per_row + b]);
      const __m512 pv = _mm512_sub_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(i1[t]), _mm512_mul_ps(dw, dx)),
                                      _mm512_mul_ps(_mm512_cvtepi32_ps(i2), _mm512_mul_ps(dmw, dx)));
      acc[t] = _mm512_add_ps(acc[t], pv);
    }
  }
  for (int t = 0; t < RT; ++t) _mm512_storeu_ps(j.y + (r0 + t) * j.n + n, acc[t]);
}

// Q6_K: as k45_rows; quants are 4 + 2 bits from two planes, 16-element sub-blocks (two per
// 8 planes r), signed scales, and the + 32 of the stored quants taken out as 32 * (scales . sums).
// Up to 4 rows keep every accumulator in registers. 8 rows (kWide) share each block's unpack, which
// at ~9 ops per two vectors costs Q6_K more than its dot products at 4 rows: their float sums stay
// in y and the low- and high-nibble sub-blocks run one after the other, so the int sums fit the
// 32 registers. Integer adds in another order and the same float adds: the same bits.
template <int RT>
static void k6_rows(const Job& j, const int32_t* pairs, int64_t n, int64_t r0) {
  constexpr bool kWide = RT > 4;
  const int64_t nb = j.k / 256;
  const uint8_t* src = j.wpack + size_t(n / 16) * size_t(nb) * kQ6KPackBlockBytes;
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  const uint8_t* xq0 = reinterpret_cast<const uint8_t*>(j.act.qs + r0 * j.k);
  __m512 acc[kWide ? 1 : RT];
  if constexpr (kWide) {
    for (int t = 0; t < RT; ++t) _mm512_storeu_ps(j.y + (r0 + t) * j.n + n, _mm512_setzero_ps());
  } else {
#pragma GCC unroll 16
    for (int t = 0; t < RT; ++t) acc[t] = _mm512_setzero_ps();
  }
  // scale of sub-block g: word g % 2 of pair g / 2, sign-extended
  auto scale = [](const uint8_t* s, int g) {
    const __m512i w = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 3072 + 32 * (g / 2))));
    return g % 2 ? _mm512_srai_epi32(w, 16) : _mm512_srai_epi32(_mm512_slli_epi32(w, 16), 16);
  };
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* s = src + b * kQ6KPackBlockBytes;
    kq_prefetch_next<kQ6KPackBlockBytes>(s);
    __m512i iv[RT];
#pragma GCC unroll 16
    for (int t = 0; t < RT; ++t) iv[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
      for (int e = 0; e < 2; ++e)
#pragma GCC unroll 2
        for (int rr = 0; rr < 2; ++rr) {  // sub-blocks 8h + 2e + rr (low nibbles), + 4 (high)
          const int gl = 8 * h + 2 * e + rr, gh = gl + 4;
          // sub-block gl's quants (low nibbles) or gh's (high) of plane r
          auto quants = [&](int r, bool high) {
            const __m512i v = _mm512_loadu_si512(s + 1024 * h + 512 * e + 64 * r);
            const __m512i qh = _mm512_loadu_si512(s + 2048 + 512 * h + 64 * r);
            if (!high) return _mm512_or_si512(_mm512_and_si512(v, m4), _mm512_and_si512(_mm512_slli_epi16(qh, 4 - 2 * e), m30));
            return _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4),
                                   _mm512_and_si512(e ? _mm512_srli_epi16(qh, 2) : qh, m30));
          };
          auto xq = [&](int t, int r) { return xq0 + t * j.k + b * 256 + 128 * h + 32 * e + 4 * r; };
          if constexpr (kWide) {
#pragma GCC unroll 2
            for (int half = 0; half < 2; ++half) {
              __m512i d[RT];
#pragma GCC unroll 16
              for (int t = 0; t < RT; ++t) d[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
              for (int r = 4 * rr; r < 4 * rr + 4; ++r) {
                const __m512i q = quants(r, half);
#pragma GCC unroll 16
                for (int t = 0; t < RT; ++t) d[t] = dpbusd_bcast(d[t], q, xq(t, r) + 64 * half);
              }
              const __m512i sc = scale(s, half ? gh : gl);
#pragma GCC unroll 16
              for (int t = 0; t < RT; ++t) iv[t] = _mm512_add_epi32(iv[t], _mm512_mullo_epi32(d[t], sc));
            }
          } else {
            __m512i dl[RT], dh[RT];
#pragma GCC unroll 16
            for (int t = 0; t < RT; ++t) dl[t] = dh[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int r = 4 * rr; r < 4 * rr + 4; ++r) {
              const __m512i lo = quants(r, false), hi = quants(r, true);
#pragma GCC unroll 16
              for (int t = 0; t < RT; ++t) {
                dl[t] = dpbusd_bcast(dl[t], lo, xq(t, r));
                dh[t] = dpbusd_bcast(dh[t], hi, xq(t, r) + 64);
              }
            }
            const __m512i sl = scale(s, gl), sh = scale(s, gh);
#pragma GCC unroll 16
            for (int t = 0; t < RT; ++t)
              iv[t] = _mm512_add_epi32(iv[t], _mm512_add_epi32(_mm512_mullo_epi32(dl[t], sl), _mm512_mullo_epi32(dh[t], sh)));
          }
        }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 3328)));
#pragma GCC unroll 16
    for (int t = 0; t < RT; ++t) {
      const int32_t* pr = pairs + ((r0 + t) * nb + b) * 8;
      __m512i c = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int p = 0; p < 8; ++p)
        c = _mm512_dpwssd_epi32(c, _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 3072 + 32 * p))),
                                _mm512_set1_epi32(pr[p]));
      const __m512i i = _mm512_sub_epi32(iv[t], _mm512_slli_epi32(c, 5));
      const __m512 dx = _mm512_set1_ps(j.act.d[(r0 + t) * j.act.d_per_row + b]);
      const __m512 pv = _mm512_mul_ps(_mm512_cvtepi32_ps(i), _mm512_mul_ps(dw, dx));
      if constexpr (kWide) {
        float* y = j.y + (r0 + t) * j.n + n;
        _mm512_storeu_ps(y, _mm512_add_ps(_mm512_loadu_ps(y), pv));
      } else {
        acc[t] = _mm512_add_ps(acc[t], pv);
      }
    }
  }
  if constexpr (!kWide)
    for (int t = 0; t < RT; ++t) _mm512_storeu_ps(j.y + (r0 + t) * j.n + n, acc[t]);
}

template <WKind K, int RT>
static inline void kq_rows(const Job& j, const int32_t* pairs, int64_t n, int64_t r0) {
  if constexpr (K == kQ6_K) k6_rows<RT>(j, pairs, n, r0);
  else k45_rows<K, RT>(j, pairs, n, r0);
}

// Every row over the pack; rows past N / 16 * 16 (and every row without a pack) on the GGUF path.
template <WKind K>
void cols_kq_packed(const Job& j, int64_t n0, int64_t n1) {
  const int64_t full = j.wpack ? n0 + (n1 - n0) / 16 * 16 : n0;
  if (full > n0) {
    const int32_t* pairs = kq_sum_pairs<K>(j);
    for (int64_t n = n0; n < full; n += 16) {  // 4 rows a pass (Q6_K: 8); the group stays in cache for the next
      int64_t r = 0;
      if constexpr (K == kQ6_K)  // Q4_K / Q5_K at 8 rows: within 4 % either way (their unpack is cheap)
        for (; r + 8 <= j.t; r += 8) kq_rows<K, 8>(j, pairs, n, r);
      for (; r + 4 <= j.t; r += 4) kq_rows<K, 4>(j, pairs, n, r);
      if (j.t - r == 3) kq_rows<K, 3>(j, pairs, n, r);
      if (j.t - r == 2) kq_rows<K, 2>(j, pairs, n, r);
      if (j.t - r == 1) kq_rows<K, 1>(j, pairs, n, r);
    }
  }
  if (full < n1) cols_kquant_v<K>(j, full, n1);  // after: it reuses the kernel scratch
}
