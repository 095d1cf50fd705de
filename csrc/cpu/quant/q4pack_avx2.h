// AVX2 on the repacked Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 weights (q4pack.h): each 16-column group as two 8-lane
// halves, so a lane is one output column and the epilogue needs no horizontal sums. Included after
// dot_generic.h, q4rows.h and cpu/softmax_exp.h in TUs compiled for AVX2. Same bits as
// dot_generic.h: exact integer block dots, then its float operations in block order.
// (No include guard: included once per ISA namespace.)
//
// AVX2 has no vpdpbusd: vpmaddubsw multiplies u8 weights by s8 activations into int16 pairs and
// vpmaddwd by ones widens them to the dword sums. Nibble pairs are at most 2 * 15 * 127 = 3810, so
// a block's 8 products add up in int16 (<= 30480) before one vpmaddwd. Q8_0 weights are signed:
// |w| times the activation with w's sign (pairs <= 2 * 128 * 127 = 32512), one vpmaddwd each.

// Blocks ahead that the weights are prefetched, every line of the block, into L2 as in q4pack_avx512.h
// (the default model's decode on this path, Zen 4 with EYAS_ISA=avx2: 149-156 -> 171-198 tok/s, three
// alternating pairs). Every line and 16 blocks ahead, not lines 0 and 2 of a block 8 ahead (the adjacent-
// line prefetcher left to fetch the rest): Intel VM, cold, 2 threads, T = 1, three alternating runs at
// 8192x2048, 3072x576, 49152x576: Q4_1 19.1-21.9 -> 25.0-28.6 GB/s, Q4_0 18.2-21.3 -> 21.9-26.6, Q5_0
// 21.1-21.8 -> 24.2-25.8, Q8_0 21.1-25.5 -> 24.0-29.5.
constexpr int kQ4A2PrefetchBlocks = 16;

static inline __m256i bcast_dword(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// An empty asm that takes v in a register: GCC may not reassociate the integer sums across it, which
// it otherwise does by computing every plane's products first and spilling them.
static inline void keep_in_register(__m256i& v) { asm("" : "+x"(v)); }

// Rows [r0, r0 + RT) x halves [h0, h0 + H) (half h: columns 8h..8h+7) of the 16-column group at n.
// Each weight plane is unpacked once per block and used by every row at once, so only the planes in
// flight, the rows' integer sums and their float accumulators occupy registers (2 RT H + ~6); H = 2
// shares each activation broadcast between the halves.
template <WKind K, int RT, int H>
static void q4a_rows(const Job& j, const Q4Rows& xr, int64_t n, int h0, int64_t r0) {
  constexpr bool has_min = K == kQ4_1 || K == kQ5_1, q8 = K == kQ8_0, five = K == kQ5_0 || K == kQ5_1;
  constexpr Q4PackAt at = q8 ? Q4PackAt{-1, 512, -1, kQ8PackBlockBytes} : q4pack_at(K);
  constexpr int block_bytes = at.bytes, d_at = at.d;
  const int64_t nb = j.k / 32;
  const uint8_t* grp = j.wpack + size_t(n / 16) * size_t(nb) * block_bytes;
  const __m256i m4 = _mm256_set1_epi8(0x0F), m10 = _mm256_set1_epi8(0x10), ones = _mm256_set1_epi16(1),
                bias = _mm256_set1_epi8(char(0x80));
  const int8_t* xq0 = j.act.qs + r0 * j.k;
  const float* dx0 = xr.dx + r0 * nb;
  const float* dsx0 = xr.dsx + r0 * nb;
  const int32_t* off0 = xr.off + r0 * nb;
  __m256 acc[RT][H];
#pragma GCC unroll 8
  for (int t = 0; t < RT; ++t)
    for (int hh = 0; hh < H; ++hh) acc[t][hh] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = grp + b * block_bytes;
#pragma GCC unroll 16
    for (int l = 0; l < block_bytes; l += 64)
      _mm_prefetch(reinterpret_cast<const char*>(blk + kQ4A2PrefetchBlocks * block_bytes + l), _MM_HINT_T1);
    const int8_t* xb = xq0 + b * 32;
    __m256i iv[RT][H];
    if constexpr (q8) {
#pragma GCC unroll 8
      for (int t = 0; t < RT; ++t)
        for (int hh = 0; hh < H; ++hh) iv[t][hh] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r) {  // the pack stores int8 + 128: flip the top bit back
        __m256i w[H], wa[H];
#pragma GCC unroll 2
        for (int hh = 0; hh < H; ++hh) {
          w[hh] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 * (h0 + hh) + 64 * r)), bias);
          wa[hh] = _mm256_abs_epi8(w[hh]);
        }
#pragma GCC unroll 8
        for (int t = 0; t < RT; ++t) {
          const __m256i xv = bcast_dword(xb + t * j.k + 4 * r);
#pragma GCC unroll 2
          for (int hh = 0; hh < H; ++hh)
            iv[t][hh] = _mm256_add_epi32(iv[t][hh], _mm256_madd_epi16(_mm256_maddubs_epi16(wa[hh], _mm256_sign_epi8(xv, w[hh])), ones));
        }
#pragma GCC unroll 8
        for (int t = 0; t < RT; ++t)
          for (int hh = 0; hh < H; ++hh) keep_in_register(iv[t][hh]);
      }
    } else {
      // Q5: quants up to 31 make a pair up to 2 * 31 * 127 = 7874, so the int16 sums are widened
      // every two planes (4 pairs <= 31496) instead of once per block.
      constexpr int widen_every = five ? 2 : 4;
      __m256i h5[H], p16[RT][H];
#pragma GCC unroll 2
      for (int hh = 0; hh < H; ++hh) {
        h5[hh] = _mm256_setzero_si256();
        if constexpr (five) h5[hh] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 * (h0 + hh) + at.qh));
      }
#pragma GCC unroll 8
      for (int t = 0; t < RT; ++t)
        for (int hh = 0; hh < H; ++hh) iv[t][hh] = p16[t][hh] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        __m256i lo[H], hi[H];
#pragma GCC unroll 2
        for (int hh = 0; hh < H; ++hh) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 * (h0 + hh) + 64 * r));
          lo[hh] = _mm256_and_si256(v, m4), hi[hh] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
          if constexpr (five) {  // bit r of each plane byte (low nibbles), bit 4 + r (high), to bit 4
            lo[hh] = _mm256_or_si256(lo[hh], _mm256_and_si256(_mm256_slli_epi16(h5[hh], 4 - r), m10));
            hi[hh] = _mm256_or_si256(hi[hh], _mm256_and_si256(_mm256_srli_epi16(h5[hh], r), m10));
          }
        }
#pragma GCC unroll 8
        for (int t = 0; t < RT; ++t) {
          const int8_t* xq = xb + t * j.k;
          const __m256i xl = bcast_dword(xq + 4 * r), xh = bcast_dword(xq + 16 + 4 * r);
#pragma GCC unroll 2
          for (int hh = 0; hh < H; ++hh) {
            p16[t][hh] = _mm256_add_epi16(p16[t][hh], _mm256_add_epi16(_mm256_maddubs_epi16(lo[hh], xl),
                                                                       _mm256_maddubs_epi16(hi[hh], xh)));
            keep_in_register(p16[t][hh]);
          }
        }
        if ((r + 1) % widen_every == 0)
#pragma GCC unroll 8
          for (int t = 0; t < RT; ++t)
            for (int hh = 0; hh < H; ++hh) {
              iv[t][hh] = _mm256_add_epi32(iv[t][hh], _mm256_madd_epi16(p16[t][hh], ones));
              p16[t][hh] = _mm256_setzero_si256();
            }
      }
    }
#pragma GCC unroll 2
    for (int hh = 0; hh < H; ++hh) {
      const int h = h0 + hh;
      const __m256 dwv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + d_at + 16 * h)));
      __m256 mwv = dwv;
      if constexpr (has_min) mwv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + at.m + 16 * h)));
#pragma GCC unroll 8
      for (int t = 0; t < RT; ++t) {
        const int64_t rb = t * nb + b;
        __m256i it = iv[t][hh];
        if constexpr (K == kQ4_0 || K == kQ5_0) it = _mm256_sub_epi32(it, _mm256_set1_epi32(off0[rb]));
        __m256 a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(it), _mm256_mul_ps(dwv, _mm256_set1_ps(dx0[rb])), acc[t][hh]);
        if constexpr (has_min) a = _mm256_fmadd_ps(mwv, _mm256_set1_ps(dsx0[rb]), a);
        acc[t][hh] = a;
      }
    }
  }
  for (int t = 0; t < RT; ++t)
    for (int hh = 0; hh < H; ++hh) _mm256_storeu_ps(j.y + (r0 + t) * j.n + n + 8 * (h0 + hh), acc[t][hh]);
}

// Up to this many rows take both halves of a group in one pass (the activation broadcasts shared):
// Intel VM with the AVX2 table, cold 8192x2048, 2 threads, three alternating runs, T = 2 / 3: Q4_0
// 541-550 / 585-791 -> 483-498 / 527-565 us, Q8_0 844-966 / 961-1,110 -> 748-764 / 777-808, Q5_0
// 629-655 / 703-725 -> 547-628 / 584-591; T = 1 even (Q4_0 450-462 -> 437-450).
constexpr int kQ4A2BothHalvesRows = 3;

// Every row of the 16-column groups in [n0, n1): few rows both halves a pass; more rows 4 rows a
// pass per half (a group's blocks stay in L1/L2 for the passes after the first), the remainder in
// one pass.
template <WKind K>
static void q4a_cols(const Job& j, const Q4Rows& xr, int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; n += 16) {
    if (j.t <= kQ4A2BothHalvesRows) {
      switch (j.t) {
        case 3: q4a_rows<K, 3, 2>(j, xr, n, 0, 0); break;
        case 2: q4a_rows<K, 2, 2>(j, xr, n, 0, 0); break;
        default: q4a_rows<K, 1, 2>(j, xr, n, 0, 0); break;
      }
      continue;
    }
    for (int h = 0; h < 2; ++h) {
      int64_t r = 0;
      for (; r + 4 <= j.t; r += 4) q4a_rows<K, 4, 1>(j, xr, n, h, r);
      switch (j.t - r) {
        case 3: q4a_rows<K, 3, 1>(j, xr, n, h, r); break;
        case 2: q4a_rows<K, 2, 1>(j, xr, n, h, r); break;
        case 1: q4a_rows<K, 1, 1>(j, xr, n, h, r); break;
        default: break;
      }
    }
  }
}

// The AVX2 table's Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 path at every T; columns past N / 16 * 16, and every column
// when there is no pack, on the GGUF path `Fallback`. Same bits either way.
template <WKind K, ColsFn Fallback>
void cols_avx2_packed(const Job& j, int64_t n0, int64_t n1) {
  const int64_t full = j.wpack ? n0 + (n1 - n0) / 16 * 16 : n0;
  if (full > n0) {
    uint8_t* base = thread_scratch<kScratchKernel>(size_t(j.t * (j.k / 32)) * 12);
    q4a_cols<K>(j, q4_rows<K>(j, base), n0, full);
  }
  if (full < n1) Fallback(j, full, n1);
}

// 32 int32 as int8 in element order (the packs interleave 128-bit lanes; the permute undoes it).
// Values are within +-127 except a NaN activation's INT32_MIN, stored as its low byte (0) as the
// other paths' truncating stores do, not saturated.
static inline void store_q32(const __m256i (&qi)[4], int8_t* dst) {
  __m256i v[4];
  for (int i = 0; i < 4; ++i) v[i] = _mm256_andnot_si256(_mm256_cmpeq_epi32(qi[i], _mm256_set1_epi32(INT32_MIN)), qi[i]);
  const __m256i w01 = _mm256_packs_epi32(v[0], v[1]), w23 = _mm256_packs_epi32(v[2], v[3]);
  const __m256i b8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w01, w23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), b8);
}

static inline int32_t hsum8_epi32(__m256i v) {
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
  return _mm_cvtsi128_si32(s4);
}

// Activation rows quantized per 32-block with dot_generic.h's quant_rows32 bits: amax / 127 as the
// scale, x * (1 / d) clamped to +-127 and rounded half to even (vcvtps2dq under the default MXCSR).
inline void quant_rows32_avx2(const ActRows& a, int64_t r0, int64_t r1) {
  const int64_t nb = a.k / 32;
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  for (int64_t r = r0; r < r1; ++r) {
    const float* x = a.x + r * a.k;
    int8_t* q = a.qs + r * a.k;
    for (int64_t b = 0; b < nb; ++b) {
      __m256 v[4];
      __m256 m = _mm256_setzero_ps();
      for (int i = 0; i < 4; ++i) {
        v[i] = _mm256_loadu_ps(x + 32 * b + 8 * i);
        m = _mm256_max_ps(m, _mm256_and_ps(v[i], abs_mask));
      }
      const float d = hmax8_avx2(m) / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
      const __m256 idv = _mm256_set1_ps(id);
      __m256i qi[4];
      for (int i = 0; i < 4; ++i)
        qi[i] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[i], idv), lo), hi));
      store_q32(qi, q + 32 * b);
      a.d[r * a.d_per_row + b] = d;
      a.s[r * a.s_per_row + b] = hsum8_epi32(_mm256_add_epi32(_mm256_add_epi32(qi[0], qi[1]), _mm256_add_epi32(qi[2], qi[3])));
    }
  }
}

// The same for K-quant activations (quant_rows256's bits): one scale per 256-block, a sum per 16.
inline void quant_rows256_avx2(const ActRows& a, int64_t r0, int64_t r1) {
  const int64_t nb = a.k / 256;
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  for (int64_t r = r0; r < r1; ++r) {
    const float* x = a.x + r * a.k;
    int8_t* q = a.qs + r * a.k;
    for (int64_t b = 0; b < nb; ++b) {
      const float* xb = x + 256 * b;
      __m256 m = _mm256_setzero_ps();
      for (int i = 0; i < 32; ++i) m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(xb + 8 * i), abs_mask));
      const float d = hmax8_avx2(m) / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
      const __m256 idv = _mm256_set1_ps(id);
      for (int g = 0; g < 16; g += 2) {  // 32 elements: two sums of 16
        __m256i qi[4];
        for (int i = 0; i < 4; ++i)
          qi[i] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(xb + 16 * g + 8 * i), idv), lo), hi));
        store_q32(qi, q + 256 * b + 16 * g);
        for (int h = 0; h < 2; ++h) a.s[r * a.s_per_row + b * 16 + g + h] = hsum8_epi32(_mm256_add_epi32(qi[2 * h], qi[2 * h + 1]));
      }
      a.d[r * a.d_per_row + b] = d;
    }
  }
}
