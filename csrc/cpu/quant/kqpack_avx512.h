// AVX-512 VNNI on the repacked K-quant weights (q4pack.h), included after q4pack_avx512.h and
// kquant_avx512.h in TUs compiled for AVX-512 VNNI. As for the Q4 pack, vpdpbusd against a
// broadcast activation dword gives 16 rows' sub-block dots in 16 lanes (no horizontal sums); the
// sub-block scales multiply them as int32 (vpmulld) and the mins meet the activation sums with
// vpdpwssd, all exact, so i1 and i2 are dot_generic.h's integers; the float epilogue is
// kblock_term's per block, added in block order.
// (No include guard: included once per ISA namespace.)

// Requests the pack block 4 blocks after the one at p (Bytes long) into L2 while this one computes (the
// blocks between were requested by the 3 blocks before). On the 16-core device hosts 1 block ahead left
// DRAM idle at 16 threads: cold 8192x2048 / 2048x8192 Q4_K at T = 1, two alternating rounds, 75-105 /
// 87-110 -> 69-71 / 73-79 us, and SmolLM2-1.7B Q4_K_M decode 65.5 -> 89.7 tok/s in one round (2 ahead:
// between); on the 2-vCPU AMX VM even to 4 % faster (docs/performance.md §8.6). One
// stream per core with this prefetch streams faster than several (the Q4 pack path's kQ4Streams):
// 8192x2048 cold at T = 1, 1 thread, Zen 5: Q4_K 25-30 GB/s against 15-26, Q6_K 28-30 against 17.
// Into L1, the 44-53 requests of a Q5_K or Q6_K block stalled the stream on Zen 4 (cold, 1 / 2 threads:
// Q6_K 7.4-7.6 / 12.5 -> 16-17 / 18-22 GB/s, Q5_K 8-13 / 13-15 -> 15-20 / 21-28), and Q4_K's on an Intel
// Xeon (bench_matmul cold, 2 threads, 16384x2048 T = 1 / 8: 851-861 / 1,428-1,678 -> 686-750 /
// 1,243-1,295 us; SmolLM2-1.7B Q4_K_M decode step 43.5-44.4 -> 41.4-43.6 ms), where Zen 4 had it even.
constexpr int kKqPrefetchAhead = 4;  // blocks
template <int Bytes>
static inline void kq_prefetch_block(const uint8_t* p) {  // the block at p, into L2
#pragma GCC unroll 64
  for (int l = 0; l < (Bytes + 63) / 64; ++l) _mm_prefetch(reinterpret_cast<const char*>(p + 64 * l), _MM_HINT_T1);
}
template <int Bytes>
static inline void kq_prefetch_next(const uint8_t* p) {
  kq_prefetch_block<Bytes>(p + kKqPrefetchAhead * Bytes);
}
// Part `part` of Parts of kq_prefetch_next's lines: the row passes spread a block's 36-53 requests over its
// computation instead of one burst at its start. On Zen 4 the burst starved passes of 2-8 rows, where a
// block's arithmetic is long: cold 8192x2048, 2 threads, three alternating rounds, Q6_K T = 4 761-894 ->
// 541-647 us, T = 8 1,008-1,240 -> 711-854, Q5_K T = 4 555-622 -> 455-533; T = 1 even (docs/performance.md §8.4).
// On a shared 16-core Intel host with AMX the A/B stayed within that host's noise (same section).
template <int Bytes, int Parts>
static inline void kq_prefetch_next_part(const uint8_t* p, int part) {
  constexpr int lines = (Bytes + 63) / 64;
  for (int l = part * lines / Parts; l < (part + 1) * lines / Parts; ++l)
    _mm_prefetch(reinterpret_cast<const char*>(p + kKqPrefetchAhead * Bytes + 64 * l), _MM_HINT_T1);
}

// Block b's float term of dot_generic.h for one row, given the row's sub-block dots with their
// scales applied (i1): Q4_K / Q5_K subtract the mins' term, Q6_K takes the stored quants' + 32 out
// as 32 * (scales . sums). Built once per pack block s; each call is one row.
template <WKind K>
struct KqBlockTerm {
  const uint8_t* s;
  __m512i mw[4];  // Q4_K / Q5_K mins as int16 pairs (Q6_K widens its scale pairs per call instead)
  __m512 dw, dmw;
  explicit KqBlockTerm(const uint8_t* blk) : s(blk) {
    if constexpr (K == kQ6_K) {
      dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + kQ6PackD)));
    } else {
      constexpr KPackAt at = kpack_at(K);
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) mw[p] = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + at.mn + 32 * p)));
      dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + at.d)));
      dmw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + at.dmin)));
    }
  }
  // pr: the row's activation sum pairs for this block (kq_sum_pairs); dx: its activation scale.
  __m512 operator()(const int32_t* pr, float dx, __m512i i1) const {
    const __m512 dxv = _mm512_set1_ps(dx);
    if constexpr (K == kQ6_K) {
      __m512i c = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int p = 0; p < 8; ++p)
        c = _mm512_dpwssd_epi32(c, _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + kQ6PackScales + 32 * p))),
                                _mm512_set1_epi32(pr[p]));
      const __m512i i = _mm512_sub_epi32(i1, _mm512_slli_epi32(c, 5));
      return _mm512_mul_ps(_mm512_cvtepi32_ps(i), _mm512_mul_ps(dw, dxv));
    } else {
      __m512i i2 = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) i2 = _mm512_dpwssd_epi32(i2, mw[p], _mm512_set1_epi32(pr[p]));
      return _mm512_sub_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(i1), _mm512_mul_ps(dw, dxv)),
                           _mm512_mul_ps(_mm512_cvtepi32_ps(i2), _mm512_mul_ps(dmw, dxv)));
    }
  }
};

// Block b's float terms of rows r0 .. r0 + RT (their integer dots with the scales applied in iv) added
// to their sums: in acc, or for passes of many rows (kWide) in y, where they wait between blocks.
template <WKind K, int RT, bool kWide>
__attribute__((always_inline)) static inline void kq_add_block_terms(const Job& j, const KqBlockTerm<K>& term,
                                                                     const int32_t* pairs, int64_t b, int64_t n,
                                                                     int64_t r0, const __m512i* iv, __m512* acc) {
  const int64_t nb = j.k / 256;
#pragma GCC unroll 16
  for (int t = 0; t < RT; ++t) {
    const __m512 pv = term(pairs + ((r0 + t) * nb + b) * kq_pairs_per_block(K), j.act.d[(r0 + t) * j.act.d_per_row + b], iv[t]);
    if constexpr (kWide) {
      float* y = j.y + (r0 + t) * j.n + n;
      _mm512_storeu_ps(y, _mm512_add_ps(_mm512_loadu_ps(y), pv));
    } else {
      acc[t] = _mm512_add_ps(acc[t], pv);
    }
  }
}

// GF(2) affine maps of each byte (vgf2p8affineqb with a broadcast 8x8 bit matrix; asm, so the TU needs no
// GFNI target, run only where gfni_usable()). Matrix byte 7 - i selects the input bits of output bit i.
// With one map and one bit select (vpternlogd) a Q5_K or Q6_K plane takes 2-3 vector ops instead of 4-6
// shifts, masks and ors: one-row passes ~2-6 % faster cold, SmolLM2-1.7B Q5_K_M decode ~3 %
// (docs/performance.md §8.7).
// Bit pair f of a qh byte to bits 4-5, all else 0 (Q6_K).
static constexpr uint64_t kQhPairTo45[4] = {
    (uint64_t(1) << 24) | (uint64_t(2) << 16), (uint64_t(4) << 24) | (uint64_t(8) << 16),
    (uint64_t(16) << 24) | (uint64_t(32) << 16), (uint64_t(64) << 24) | (uint64_t(128) << 16)};
// Bit b of a byte to bit 4, all else 0 (Q5_K's fifth bits, as k5_fifth_bits).
static constexpr uint64_t kBitTo4[8] = {uint64_t(1) << 24,  uint64_t(2) << 24,  uint64_t(4) << 24,
                                        uint64_t(8) << 24,  uint64_t(16) << 24, uint64_t(32) << 24,
                                        uint64_t(64) << 24, uint64_t(128) << 24};
static inline __m512i gf2_affine(__m512i x, const uint64_t* matrix) {
  __m512i y;
  asm("vgf2p8affineqb $0, %2%{1to8%}, %1, %0" : "=v"(y) : "v"(x), "m"(*matrix));
  return y;
}

// Q5_K's qh plane h: bit `bit` of each byte moved to bit 4 (the fifth bit of plane (c, r)'s low
// nibbles is bit 2c, of its high nibbles 2c + 1).
static inline __m512i k5_fifth_bits(__m512i h, int bit) {
  return _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, bit), _mm512_set1_epi8(1)), 4);
}

// Q4_K / Q5_K: RT rows x the 16 columns from n. Up to 4 rows keep every accumulator in registers; 8
// rows (kWide) stream each block once for all of them (a verify of 8 nodes read the weights in two
// passes of 4), with their float sums in y and the low- and high-nibble sub-blocks of a line in turn,
// so the int sums fit the 32 registers. Same integers, same float adds. Cold 8192x2048 / 2048x8192,
// 2 threads, Intel VM, T = 8: Q4_K 576-590 / 624-654 -> 543-549 / 554-563 us, Q5_K 761-808 / 767-795
// -> 672-682 / 670-672 us (warm: Q4_K even, Q5_K 599-603 -> 510 us).
template <WKind K, int RT, int S, bool Gfni>
static void k45_rows(const Job& j, const int32_t* pairs, const int64_t (&ns)[S], int64_t r0) {
  constexpr bool kWide = RT > 4;
  static_assert(!kWide || S == 1, "passes of many rows walk one group at a time");
  constexpr KPackAt at = kpack_at(K);
  const int64_t nb = j.k / 256;
  const uint8_t* srcs[S];
  for (int g = 0; g < S; ++g) srcs[g] = j.wpack + size_t(ns[g] / 16) * size_t(nb) * at.bytes;
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const uint8_t* xq0 = reinterpret_cast<const uint8_t*>(j.act.qs + r0 * j.k);
  __m512 accs[S][kWide ? 1 : RT];
  if constexpr (kWide) {
    for (int t = 0; t < RT; ++t) _mm512_storeu_ps(j.y + (r0 + t) * j.n + ns[0], _mm512_setzero_ps());
  } else {
#pragma GCC unroll 16
    for (int g = 0; g < S; ++g)
#pragma GCC unroll 16
      for (int t = 0; t < RT; ++t) accs[g][t] = _mm512_setzero_ps();
  }
  // Plane r of sub-block pair c: the low nibbles (sub-block 2c) or the high ones (2c + 1). Q4_K's high
  // nibbles stay in place (16 x their value), their dots shifted down once per c, exactly (8 dots of 4
  // products stay far inside int32): one vector op less per line.
  auto quants = [&](const uint8_t* s, int c, int r, bool high) {
    const __m512i v = _mm512_loadu_si512(s + kpack_ql(K, c, r));
    if constexpr (K == kQ5_K && Gfni) {  // the nibble where m4 is set, fifth bit 2c + high at bit 4, else 0
      const __m512i fifth = gf2_affine(_mm512_loadu_si512(s + kpack_qh(r)), &kBitTo4[2 * c + high]);
      return _mm512_ternarylogic_epi32(high ? _mm512_srli_epi16(v, 4) : v, fifth, m4, 0xE4);
    }
    __m512i q = !high ? _mm512_and_si512(v, m4)
                      : K == kQ5_K ? _mm512_and_si512(_mm512_srli_epi16(v, 4), m4) : _mm512_andnot_si512(m4, v);
    if constexpr (K == kQ5_K)  // fifth bits 2c, 2c + 1 of the qh plane, to bit 4 (per byte)
      q = _mm512_or_si512(q, k5_fifth_bits(_mm512_loadu_si512(s + kpack_qh(r)), 2 * c + high));
    return q;
  };
  for (int64_t b = 0; b < nb; ++b) {
#pragma GCC unroll 4
    for (int g = 0; g < S; ++g) {
      const int64_t n = ns[g];
      __m512* acc = accs[g];
      const uint8_t* s = srcs[g] + b * at.bytes;
      __m512i i1[RT];
#pragma GCC unroll 16
      for (int t = 0; t < RT; ++t) i1[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        kq_prefetch_next_part<at.bytes, 4>(s, c);
        const __m512i scl = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + at.sc + 32 * c)));
        const __m512i sch = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + at.sc + 16 + 32 * c)));
        if constexpr (kWide) {
#pragma GCC unroll 2
          for (int high = 0; high < 2; ++high) {
            __m512i d[RT];
#pragma GCC unroll 16
            for (int t = 0; t < RT; ++t) d[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int r = 0; r < 8; ++r) {
              const __m512i q = quants(s, c, r, high);
#pragma GCC unroll 16
              for (int t = 0; t < RT; ++t) d[t] = dpbusd_bcast(d[t], q, xq0 + t * j.k + b * 256 + 64 * c + 32 * high + 4 * r);
            }
#pragma GCC unroll 16
            for (int t = 0; t < RT; ++t)
              i1[t] = _mm512_add_epi32(i1[t], _mm512_mullo_epi32(K != kQ5_K && high ? _mm512_srai_epi32(d[t], 4) : d[t], high ? sch : scl));
          }
        } else {
          __m512i dl[RT], dh[RT];
#pragma GCC unroll 16
          for (int t = 0; t < RT; ++t) dl[t] = dh[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
          for (int r = 0; r < 8; ++r) {
            const __m512i lo = quants(s, c, r, false), hi = quants(s, c, r, true);
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
#pragma GCC unroll 16
          for (int t = 0; t < RT; ++t)
            i1[t] = _mm512_add_epi32(i1[t], _mm512_add_epi32(_mm512_mullo_epi32(dl[t], scl), _mm512_mullo_epi32(dh[t], sch)));
        }
      }
      kq_add_block_terms<K, RT, kWide>(j, KqBlockTerm<K>(s), pairs, b, n, r0, i1, acc);
    }
  }
  if constexpr (!kWide)
    for (int g = 0; g < S; ++g)
      for (int t = 0; t < RT; ++t) _mm512_storeu_ps(j.y + (r0 + t) * j.n + ns[g], accs[g][t]);
}

// Q6_K pack block s: the quants (0..63) of plane (h, e, r), low nibbles (elements 128h + 32e + 4r ..)
// or high (+ 64), and the int32 scale of sub-block g in each column's lane.
template <bool Gfni = false>
static inline __m512i k6_plane(__m512i v, __m512i qh, int e, bool high) {  // v: the ql line, qh: its qh line
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  if constexpr (Gfni) {  // the nibble where m4 is set, the qh pair (low: pair e, high: 2 + e) elsewhere
    const __m512i pair = gf2_affine(qh, &kQhPairTo45[high ? 2 + e : e]);
    return _mm512_ternarylogic_epi32(high ? _mm512_srli_epi16(v, 4) : v, pair, m4, 0xE4);
  }
  if (!high) return _mm512_or_si512(_mm512_and_si512(v, m4), _mm512_and_si512(_mm512_slli_epi16(qh, 4 - 2 * e), m30));
  return _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4), _mm512_and_si512(e ? _mm512_srli_epi16(qh, 2) : qh, m30));
}
template <bool Gfni = false>
static inline __m512i k6_quants(const uint8_t* s, int h, int e, int r, bool high) {
  return k6_plane<Gfni>(_mm512_loadu_si512(s + q6pack_ql(h, e, r)), _mm512_loadu_si512(s + q6pack_qh(h, r)), e, high);
}
static inline __m512i k6_scale(const uint8_t* s, int g) {  // word g % 2 of pair g / 2, sign-extended
  const __m512i w = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + kQ6PackScales + 32 * (g / 2))));
  return g % 2 ? _mm512_srai_epi32(w, 16) : _mm512_srai_epi32(_mm512_slli_epi32(w, 16), 16);
}

// Q6_K: as k45_rows; quants are 4 + 2 bits from two planes, 16-element sub-blocks (two per
// 8 planes r), signed scales, and the + 32 of the stored quants taken out as 32 * (scales . sums).
// Each plane r takes the ql lines of e = 0 and 1 with the qh line they share, which the pack stores
// side by side, so a block is read once and in address order. Before (each e's pass over its ql lines,
// the qh lines read again by the second), cold 2 threads on the Zen 4 VM, 6-8 alternating process
// pairs, medians: 8192x2048 T = 1 / 2 / 4 / 8 552 / 587 / 582 / 845 -> 542 / 528 / 575 / 714 us,
// 2048x8192 495 / 611 / 708 / 1,192 -> 539 / 538 / 658 / 811 (docs/performance.md §8.4).
// Up to 4 rows keep every accumulator in registers. 8 rows (kWide) share each block's unpack, which
// at ~9 ops per two vectors costs Q6_K more than its dot products at 4 rows: their float sums stay
// in y and the low- and high-nibble sub-blocks run one after the other, so the int sums fit the
// 32 registers. Integer adds in another order and the same float adds: the same bits.
template <int RT, int S, bool Gfni>
static void k6_rows(const Job& j, const int32_t* pairs, const int64_t (&ns)[S], int64_t r0) {
  constexpr bool kWide = RT > 4;
  static_assert(!kWide || S == 1, "passes of many rows walk one group at a time");
  const int64_t nb = j.k / 256;
  const uint8_t* srcs[S];
  for (int g = 0; g < S; ++g) srcs[g] = j.wpack + size_t(ns[g] / 16) * size_t(nb) * kQ6KPackBlockBytes;
  const uint8_t* xq0 = reinterpret_cast<const uint8_t*>(j.act.qs + r0 * j.k);
  __m512 accs[S][kWide ? 1 : RT];
  if constexpr (kWide) {
    for (int t = 0; t < RT; ++t) _mm512_storeu_ps(j.y + (r0 + t) * j.n + ns[0], _mm512_setzero_ps());
  } else {
#pragma GCC unroll 16
    for (int g = 0; g < S; ++g)
#pragma GCC unroll 16
      for (int t = 0; t < RT; ++t) accs[g][t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
#pragma GCC unroll 4
    for (int g = 0; g < S; ++g) {
      const int64_t n = ns[g];
      __m512* acc = accs[g];
      const uint8_t* s = srcs[g] + b * kQ6KPackBlockBytes;
      __m512i iv[RT];
#pragma GCC unroll 16
      for (int t = 0; t < RT; ++t) iv[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
        for (int rr = 0; rr < 2; ++rr) {  // sub-blocks 8h + 2e + rr (low nibbles) and + 4 (high), e = 0, 1
          // planes r of both e: their ql lines and the qh line they share, in the pack's order
          auto lines = [&](int r, __m512i* v, __m512i& qh, bool request = true) {
            if (request) kq_prefetch_next_part<kQ6KPackBlockBytes, 16>(s, 4 * (2 * h + rr) + r % 4);
            v[0] = _mm512_loadu_si512(s + q6pack_ql(h, 0, r));
            v[1] = _mm512_loadu_si512(s + q6pack_ql(h, 1, r));
            qh = _mm512_loadu_si512(s + q6pack_qh(h, r));
          };
          auto xq = [&](int t, int e, int r) { return xq0 + t * j.k + b * 256 + 128 * h + 32 * e + 4 * r; };
          if constexpr (kWide) {
#pragma GCC unroll 2
            for (int half = 0; half < 2; ++half) {
              __m512i d[2][RT];
#pragma GCC unroll 16
              for (int t = 0; t < RT; ++t) d[0][t] = d[1][t] = _mm512_setzero_si512();
#pragma GCC unroll 4
              for (int r = 4 * rr; r < 4 * rr + 4; ++r) {
                __m512i v[2], qh;
                lines(r, v, qh, half == 0);  // the second half's lines come from L1
#pragma GCC unroll 2
                for (int e = 0; e < 2; ++e) {
                  const __m512i q = k6_plane<Gfni>(v[e], qh, e, half);
#pragma GCC unroll 16
                  for (int t = 0; t < RT; ++t) d[e][t] = dpbusd_bcast(d[e][t], q, xq(t, e, r) + 64 * half);
                }
              }
              const __m512i s0 = k6_scale(s, 8 * h + rr + 4 * half), s1 = k6_scale(s, 8 * h + 2 + rr + 4 * half);
#pragma GCC unroll 16
              for (int t = 0; t < RT; ++t)
                iv[t] = _mm512_add_epi32(iv[t], _mm512_add_epi32(_mm512_mullo_epi32(d[0][t], s0), _mm512_mullo_epi32(d[1][t], s1)));
            }
          } else {
            __m512i dl[2][RT], dh[2][RT];
#pragma GCC unroll 16
            for (int t = 0; t < RT; ++t) dl[0][t] = dh[0][t] = dl[1][t] = dh[1][t] = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int r = 4 * rr; r < 4 * rr + 4; ++r) {
              __m512i v[2], qh;
              lines(r, v, qh);
#pragma GCC unroll 2
              for (int e = 0; e < 2; ++e) {
                const __m512i lo = k6_plane<Gfni>(v[e], qh, e, false), hi = k6_plane<Gfni>(v[e], qh, e, true);
#pragma GCC unroll 16
                for (int t = 0; t < RT; ++t) {
                  dl[e][t] = dpbusd_bcast(dl[e][t], lo, xq(t, e, r));
                  dh[e][t] = dpbusd_bcast(dh[e][t], hi, xq(t, e, r) + 64);
                }
              }
            }
#pragma GCC unroll 2
            for (int e = 0; e < 2; ++e) {
              const int gl = 8 * h + 2 * e + rr;
              const __m512i sl = k6_scale(s, gl), sh = k6_scale(s, gl + 4);
#pragma GCC unroll 16
              for (int t = 0; t < RT; ++t)
                iv[t] = _mm512_add_epi32(iv[t], _mm512_add_epi32(_mm512_mullo_epi32(dl[e][t], sl), _mm512_mullo_epi32(dh[e][t], sh)));
            }
          }
        }
      kq_add_block_terms<kQ6_K, RT, kWide>(j, KqBlockTerm<kQ6_K>(s), pairs, b, n, r0, iv, acc);
    }
  }
  if constexpr (!kWide)
    for (int g = 0; g < S; ++g)
      for (int t = 0; t < RT; ++t) _mm512_storeu_ps(j.y + (r0 + t) * j.n + ns[g], accs[g][t]);
}

// Many rows: a 16-column group's quants are unpacked once into u8 planes (plane p of block b: elements
// 4p .. 4p + 3 of the 16 columns, 64 bytes) beside its sub-block scales as int32 lanes, so each pass
// of rows is vpdpbusd and the scale multiply only. The 4- and 8-row passes above unpack every block
// again (Q6_K: ~5 ops per plane against the 8 dot products it feeds). Same integers, same float terms.
// From 16 rows (Q4_K, whose unpack is cheapest: 24); cold 8192x2048, 2 threads, Intel VM, T = 16 / 32 /
// 128: Q6_K 1,632-1,644 / 2,888-2,962 / 10,617-11,070 -> 1,504-1,522 / 2,352-2,381 / 7,920-8,474 us,
// Q5_K 1,417-1,554 / 2,630-2,712 / 9,479-9,704 -> 1,261-1,419 / 2,071-2,143 / 6,679-7,817; Q4_K at
// T = 16 1,078-1,088 -> 1,199-1,224 (slower), at 32 / 128 1,880-2,298 / 7,236-7,268 -> 1,931-1,951 / 6,620-6,795.
template <WKind K>
constexpr int64_t kq_unpack_min_rows() { return K == kQ4_K ? 24 : 16; }

// Unpacks the nb pack blocks from src into planes (nb x 64 x 64 bytes) and scales (nb x sub-blocks).
template <WKind K>
static void kq_unpack_group(const uint8_t* src, int64_t nb, uint8_t* planes, __m512i* scales) {
  constexpr int G = kpack_sub_blocks(K);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  auto put = [&](int64_t b, int p, __m512i v) { _mm512_store_si512(planes + (b * 64 + p) * 64, v); };
  for (int64_t b = 0; b < nb; ++b) {
    if constexpr (K == kQ6_K) {
      const uint8_t* s = src + b * kQ6KPackBlockBytes;
      kq_prefetch_next<kQ6KPackBlockBytes>(s);
      for (int h = 0; h < 2; ++h)
#pragma GCC unroll 8
        for (int r = 0; r < 8; ++r) {  // each line once, in the pack's order
          const __m512i qh = _mm512_loadu_si512(s + q6pack_qh(h, r));
          for (int e = 0; e < 2; ++e) {  // low nibbles: elements 128h + 32e + 4r, high: + 64
            const __m512i v = _mm512_loadu_si512(s + q6pack_ql(h, e, r));
            put(b, 32 * h + 8 * e + r, k6_plane(v, qh, e, false));
            put(b, 32 * h + 16 + 8 * e + r, k6_plane(v, qh, e, true));
          }
        }
      for (int g = 0; g < G; ++g) scales[b * G + g] = k6_scale(s, g);
    } else {
      constexpr KPackAt at = kpack_at(K);
      const uint8_t* s = src + b * at.bytes;
      kq_prefetch_next<at.bytes>(s);
      for (int c = 0; c < 4; ++c)
#pragma GCC unroll 8
        for (int r = 0; r < 8; ++r) {  // low nibbles: elements 64c + 4r, high: + 32
          const __m512i v = _mm512_loadu_si512(s + kpack_ql(K, c, r));
          __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
          if constexpr (K == kQ5_K) {  // fifth bits 2c, 2c + 1 of the qh plane, to bit 4
            const __m512i h = _mm512_loadu_si512(s + kpack_qh(r));
            lo = _mm512_or_si512(lo, k5_fifth_bits(h, 2 * c));
            hi = _mm512_or_si512(hi, k5_fifth_bits(h, 2 * c + 1));
          }
          put(b, 16 * c + r, lo);
          put(b, 16 * c + 8 + r, hi);
        }
      for (int g = 0; g < G; ++g) scales[b * G + g] = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + at.sc + 16 * g)));
    }
  }
}

// RT rows x the 16 columns from n over the unpacked group (planes, scales); src: the group's pack.
// next (or nullptr): the next group's pack, requested into L2 block by block while this pass computes.
template <WKind K, int RT>
static void kq_rows_unpacked(const Job& j, const int32_t* pairs, const uint8_t* src, const uint8_t* planes,
                             const __m512i* scales, int64_t n, int64_t r0, const uint8_t* next) {
  constexpr int G = kpack_sub_blocks(K), P = 64 / G, pair_n = kq_pairs_per_block(K);  // P: planes per sub-block
  constexpr int block_bytes = K == kQ6_K ? kQ6KPackBlockBytes : kpack_at(K).bytes;
  const int64_t nb = j.k / 256;
  const uint8_t* xq0 = reinterpret_cast<const uint8_t*>(j.act.qs + r0 * j.k);
  __m512 acc[RT];
#pragma GCC unroll 16
  for (int t = 0; t < RT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    if (next) kq_prefetch_block<block_bytes>(next + b * block_bytes);  // block b of the next group
    __m512i iv[RT];
#pragma GCC unroll 16
    for (int t = 0; t < RT; ++t) iv[t] = _mm512_setzero_si512();
    for (int g = 0; g < G; ++g) {
      __m512i d[RT];
#pragma GCC unroll 16
      for (int t = 0; t < RT; ++t) d[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int p = P * g; p < P * g + P; ++p) {
        const __m512i w = _mm512_load_si512(planes + (b * 64 + p) * 64);
#pragma GCC unroll 16
        for (int t = 0; t < RT; ++t) d[t] = dpbusd_bcast(d[t], w, xq0 + t * j.k + b * 256 + 4 * p);
      }
      const __m512i sc = _mm512_load_si512(scales + b * G + g);
#pragma GCC unroll 16
      for (int t = 0; t < RT; ++t) iv[t] = _mm512_add_epi32(iv[t], _mm512_mullo_epi32(d[t], sc));
    }
    const KqBlockTerm<K> term(src + b * block_bytes);
#pragma GCC unroll 16
    for (int t = 0; t < RT; ++t)
      acc[t] = _mm512_add_ps(acc[t], term(pairs + ((r0 + t) * nb + b) * pair_n, j.act.d[(r0 + t) * j.act.d_per_row + b], iv[t]));
  }
  for (int t = 0; t < RT; ++t) _mm512_storeu_ps(j.y + (r0 + t) * j.n + n, acc[t]);
}

template <WKind K, int RT, int S>
static inline void kq_rows(const Job& j, const int32_t* pairs, const int64_t (&ns)[S], int64_t r0) {
  if constexpr (K == kQ6_K) {
    if (gfni_usable()) k6_rows<RT, S, true>(j, pairs, ns, r0);
    else k6_rows<RT, S, false>(j, pairs, ns, r0);
  } else if constexpr (K == kQ5_K) {
    if (gfni_usable()) k45_rows<K, RT, S, true>(j, pairs, ns, r0);
    else k45_rows<K, RT, S, false>(j, pairs, ns, r0);
  } else {
    k45_rows<K, RT, S, false>(j, pairs, ns, r0);
  }
}
template <WKind K, int RT>
static inline void kq_rows(const Job& j, const int32_t* pairs, int64_t n, int64_t r0) {
  const int64_t one[1] = {n};
  kq_rows<K, RT, 1>(j, pairs, one, r0);
}

// Rows [r, T) over an unpacked group in passes of 8 (then 4, 3, 2, 1); next as in kq_rows_unpacked,
// requested by the first pass only.
template <WKind K>
static void kq_unpacked_passes(const Job& j, const int32_t* pairs, const uint8_t* src, const uint8_t* planes,
                               const __m512i* scales, int64_t n, int64_t r, const uint8_t* next) {
  const int64_t r0 = r;
  auto pass = [&](auto rows) {
    kq_rows_unpacked<K, decltype(rows)::value>(j, pairs, src, planes, scales, n, r, r == r0 ? next : nullptr);
    r += decltype(rows)::value;
  };
  while (j.t - r >= 8) pass(std::integral_constant<int, 8>{});
  if (j.t - r >= 4) pass(std::integral_constant<int, 4>{});
  if (j.t - r == 3) pass(std::integral_constant<int, 3>{});
  if (j.t - r == 2) pass(std::integral_constant<int, 2>{});
  if (j.t - r == 1) pass(std::integral_constant<int, 1>{});
}

// One or two activation rows make the weights a pure stream. On Intel cores one stream per thread left
// DRAM idle: cold 8192x2048 / 2048x8192 at T = 1, 2 threads, the AMX VM (docs/performance.md §8.7), two
// groups from two ranges at once (walk_group_streams) took Q4_K 20-23 -> 25-26 GB/s, Q5_K 20-21 -> 23-24,
// Q6_K 21-22 -> 23-25, T = 2 Q4_K 462-469 -> 390-402 us; 3 or 4 rows, or 3-4 streams, gained nothing.
// On the 16-core device host (docs/performance.md §8.6) the same cold runs were even at 2-16 threads (within
// that host's noise) and 15 % slower at 1 thread. Zen 5 streamed one group faster than several (above), so
// other vendors keep one.
constexpr int kKqStreamRows = 2;
static bool kq_two_streams() {
  static const bool intel = __builtin_cpu_is("intel");
  return intel;
}

// Every row over the pack; rows past N / 16 * 16 (and every row without a pack) on the GGUF path.
template <WKind K>
void cols_kq_packed(const Job& j, int64_t n0, int64_t n1) {
  const int64_t full = j.wpack ? n0 + (n1 - n0) / 16 * 16 : n0;
  if (full > n0) {
    const int32_t* pairs = kq_sum_pairs<K>(j);
    constexpr int block_bytes = K == kQ6_K ? kQ6KPackBlockBytes : kpack_at(K).bytes;
    const int64_t nb = j.k / 256;
    if (j.t >= kq_unpack_min_rows<K>()) {
      constexpr int G = kpack_sub_blocks(K);
      uint8_t* planes = thread_scratch<kScratchUnpacked>(size_t(nb) * (4096 + 64 * G));
      __m512i* scales = reinterpret_cast<__m512i*>(planes + size_t(nb) * 4096);
      for (int64_t n = n0; n < full; n += 16) {
        const uint8_t* src = j.wpack + size_t(n / 16) * size_t(nb) * block_bytes;
        const uint8_t* next = n + 16 < full ? src + size_t(nb) * block_bytes : nullptr;  // the first pass fetches it
        kq_unpack_group<K>(src, nb, planes, scales);
        kq_unpacked_passes<K>(j, pairs, src, planes, scales, n, 0, next);
      }
    } else {
      // 8 rows a pass, then one pass of the rest; the group stays in cache for the next. 5-7 rows in one
      // pass (was 4, then 1-3 from cache): cold 2048x8192 T = 5 / 6 / 7 Q4_K 615-685 / 585-745 / 776-796 ->
      // 472-477 / 497-523 / 533-610 us, Q6_K 845-865 / 898-950 / 952-1,243 -> 680-686 / 732-742 / 804-850;
      // SmolLM2-1.7B Q4_K_M verify of 5 / 6 / 7 nodes 68.0-70.0 / 74.4-77.6 / 77.1-81.3 -> 60.2-60.8 /
      // 64.2-64.4 / 69.8-72.5 ms.
      if (j.t <= kKqStreamRows && kq_two_streams())
        walk_group_streams<2>(n0, full, [&](const auto& ns) {
          if (j.t == 1) kq_rows<K, 1>(j, pairs, ns, 0);
          else kq_rows<K, 2>(j, pairs, ns, 0);
        });
      else
        for (int64_t n = n0; n < full; n += 16)
          for_row_passes(0, j.t, [&](auto rows, int64_t r) { kq_rows<K, decltype(rows)::value>(j, pairs, n, r); });
    }
  }
  if (full < n1) cols_kquant_v<K>(j, full, n1);  // after: it reuses the kernel scratch
}
