// AVX-512 VNNI on the repacked Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 weights (q4pack.h), shared by the AVX-512 and AMX
// tables; included after simd_avx512.h and q4rows.h in TUs compiled for AVX-512 VNNI. Same bits as
// dot_generic.h: exact integer block dots, then its float operations in block order.
// (No include guard: included once per ISA namespace.)

// RT rows x 16 columns, for S column groups at once. Packed row r of a block holds, per column,
// the 4 weights that meet activation bytes 4r..4r+3, so vpdpbusd against that dword broadcast gives
// the 16 columns' integer dots in 16 lanes: no horizontal sums (the GGUF path needs them), and the
// epilogue is one 16-lane step per row and block. The S groups advance block by block together:
// S streams of weights in flight per core instead of one (see kQ4Streams), each fetched
// kQ4PrefetchBlocks ahead (prefetches never fault, so reading past the end is harmless) into L2:
// into L1 the requests stalled the streams on Zen 4 (default model decode 185-196 -> 232-242 tok/s,
// `bench_generate.py --threads 2`, three alternating pairs; cold Q8_0 49152x576 21-24 -> 28-36 GB/s).
constexpr int kQ4PrefetchBlocks = 8;

// acc += w (u8) . the activation dword at x4 (s8) in every lane, the dword as an embedded broadcast:
// GCC turns _mm512_set1_epi32(load) into a separate vpbroadcastd, one more vector op per 16-lane dot.
static inline __m512i dpbusd_bcast(__m512i acc, __m512i w, const uint8_t* x4) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*reinterpret_cast<const int32_t*>(x4)));
  return acc;
}

// A Q5 pack block's fifth bits for plane r (q4pack.h), at bit 4 of each byte: bit r of each plane byte
// for the low nibbles, bit 4 + r for the high (16-bit shifts stay inside each byte's bits 0-7).
static inline __m512i q5_fifth_bits(__m512i plane, int r, bool high) {
  const __m512i at4 = high ? _mm512_srli_epi16(plane, r) : _mm512_slli_epi16(plane, 4 - r);
  return _mm512_and_si512(at4, _mm512_set1_epi8(0x10));
}

// Q8_0's pack holds the 8 B-operand rows as they are (int8 + 128), unaligned (544-byte blocks);
// Q5_0 / Q5_1 add each plane's fifth bits to its nibbles; Q4_0's and Q5_0's blocks are loaded unaligned.
template <WKind K, int RT, int S>
static void q4v_rows(const Job& j, const Q4Rows& xr, const int64_t (&n)[S], int64_t r0) {
  constexpr bool has_min = K == kQ4_1 || K == kQ5_1, q8 = K == kQ8_0, five = K == kQ5_0 || K == kQ5_1;
  constexpr Q4PackAt at = q8 ? Q4PackAt{-1, 512, -1, kQ8PackBlockBytes} : q4pack_at(K);
  constexpr int block_bytes = at.bytes, d_at = at.d;
  const int64_t nb = j.k / 32;
  const uint8_t* src[S];
  for (int g = 0; g < S; ++g) src[g] = j.wpack + size_t(n[g] / 16) * size_t(nb) * block_bytes;
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const uint8_t* xq0 = reinterpret_cast<const uint8_t*>(j.act.qs + r0 * j.k);
  const float* dx0 = xr.dx + r0 * nb;
  const float* dsx0 = xr.dsx + r0 * nb;
  const int32_t* off0 = xr.off + r0 * nb;
  // Every loop below is unrolled so the S x RT accumulators stay in registers.
  __m512 acc[S][RT];
#pragma GCC unroll 16
  for (int g = 0; g < S; ++g)
#pragma GCC unroll 16
    for (int t = 0; t < RT; ++t) acc[g][t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
#pragma GCC unroll 16
    for (int g = 0; g < S; ++g) {
      const uint8_t* s = src[g] + b * block_bytes;
#pragma GCC unroll 16
      for (int l = 0; l < (block_bytes + 63) / 64; ++l)
        _mm_prefetch(reinterpret_cast<const char*>(s + kQ4PrefetchBlocks * block_bytes + 64 * l), _MM_HINT_T1);
      __m512i w[8];
      if constexpr (q8) {
#pragma GCC unroll 8
        for (int r = 0; r < 8; ++r) w[r] = _mm512_loadu_si512(s + 64 * r);
      } else {
        __m512i h = _mm512_setzero_si512();
        if constexpr (five) h = _mm512_loadu_si512(s + at.qh);
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
          const __m512i v = block_bytes % 64 ? _mm512_loadu_si512(s + 64 * r) : _mm512_load_si512(s + 64 * r);
          w[r] = _mm512_and_si512(v, m4);
          w[r + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
          if constexpr (five) {
            w[r] = _mm512_or_si512(w[r], q5_fifth_bits(h, r, false));
            w[r + 4] = _mm512_or_si512(w[r + 4], q5_fifth_bits(h, r, true));
          }
        }
      }
      const __m512 dwv = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + d_at)));
      __m512 mwv = _mm512_setzero_ps();
      if constexpr (has_min) mwv = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + at.m)));
#pragma GCC unroll 16
      for (int t = 0; t < RT; ++t) {
        const uint8_t* xq = xq0 + t * j.k + b * 32;
        __m512i i0 = _mm512_setzero_si512(), i1 = _mm512_setzero_si512();  // two short chains
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
          i0 = dpbusd_bcast(i0, w[r], xq + 4 * r);
          i1 = dpbusd_bcast(i1, w[r + 4], xq + 16 + 4 * r);
        }
        __m512i iv = _mm512_add_epi32(i0, i1);
        const int64_t rb = t * nb + b;
        if constexpr (!has_min) iv = _mm512_sub_epi32(iv, _mm512_set1_epi32(off0[rb]));
        __m512 a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(iv), _mm512_mul_ps(dwv, _mm512_set1_ps(dx0[rb])), acc[g][t]);
        if constexpr (has_min) a = _mm512_fmadd_ps(mwv, _mm512_set1_ps(dsx0[rb]), a);
        acc[g][t] = a;
      }
    }
  }
  for (int g = 0; g < S; ++g)
    for (int t = 0; t < RT; ++t) _mm512_storeu_ps(j.y + (r0 + t) * j.n + n[g], acc[g][t]);
}

// Few activation rows make the weights a pure stream, and one sequential stream per core leaves
// DRAM bandwidth unused (bench_bandwidth, 2 threads: 18-20 GB/s with one stream each, 25-27 with
// four), so up to kQ4StreamRows rows walk kQ4Streams evenly spaced group ranges of this thread's
// columns (4 rows walk kQ4WideStreams: q4v_cols).
constexpr int kQ4Streams = 4, kQ4StreamRows = 3;

// Calls f(ns) for the 16-column groups of [n0, n1): S groups at a time from S evenly spaced ranges
// (ns: int64_t[S], one weight stream each), then the groups left over one at a time (ns: int64_t[1]).
template <int S, typename F>
static void walk_group_streams(int64_t n0, int64_t n1, F&& f) {
  const int64_t per = (n1 - n0) / 16 / S * 16;  // columns per stream
  for (int64_t i = 0; i < per; i += 16) {
    int64_t ns[S];
    for (int g = 0; g < S; ++g) ns[g] = n0 + g * per + i;
    f(ns);
  }
  for (int64_t n = n0 + S * per; n < n1; n += 16) {
    const int64_t one[1] = {n};
    f(one);
  }
}

// RT rows over S streams of column groups (q4v_cols picks S: 4 rows take fewer).
template <WKind K, int RT, int S = kQ4Streams>
static void q4v_groups(const Job& j, const Q4Rows& xr, int64_t n0, int64_t n1, int64_t r) {
  static_assert(RT <= kQ4StreamRows + 1, "more rows take q4v_cols's passes");
  walk_group_streams<S>(n0, n1, [&](const auto& ns) {
    q4v_rows<K, RT, int(sizeof(ns) / sizeof(ns[0]))>(j, xr, ns, r);
  });
}

// Calls pass(rows, r) over rows [r, t) (rows a std::integral_constant): passes of 8 rows, then one pass
// of the rest (1-7 rows). Shared by the legacy / Q8_0 pack here and the K-quant pack (kqpack_avx512.h).
template <typename Pass>
static inline void for_row_passes(int64_t r, int64_t t, Pass&& pass) {
  for (; r + 8 <= t; r += 8) pass(std::integral_constant<int, 8>{}, r);
  switch (t - r) {
    case 7: return pass(std::integral_constant<int, 7>{}, r);
    case 6: return pass(std::integral_constant<int, 6>{}, r);
    case 5: return pass(std::integral_constant<int, 5>{}, r);
    case 4: return pass(std::integral_constant<int, 4>{}, r);
    case 3: return pass(std::integral_constant<int, 3>{}, r);
    case 2: return pass(std::integral_constant<int, 2>{}, r);
    case 1: return pass(std::integral_constant<int, 1>{}, r);
    default: return;
  }
}

// Rows [r, T) of column group n, from cache: passes of 8 rows, then one pass of the rest.
template <WKind K>
static void q4v_row_passes(const Job& j, const Q4Rows& xr, int64_t n, int64_t r) {
  const int64_t one[1] = {n};
  for_row_passes(r, j.t, [&](auto rows, int64_t r0) { q4v_rows<K, decltype(rows)::value, 1>(j, xr, one, r0); });
}

// From 5 rows the first pass runs up to kQ4WideRows rows over kQ4WideStreams column groups.
constexpr int kQ4WideRows = 8, kQ4WideStreams = 2;

// Rows [r0, T) of the 16-column groups in [n0, n1) (n0, n1 multiples of 16 within the pack).
template <WKind K>
static void q4v_cols(const Job& j, const Q4Rows& xr, int64_t n0, int64_t n1, int64_t r0) {
  const int64_t rest = j.t - r0;
  if (rest <= 0) return;
  if (rest == 1) return q4v_groups<K, 1>(j, xr, n0, n1, r0);
  if (rest == 2) return q4v_groups<K, 2>(j, xr, n0, n1, r0);
  if (rest == 3) return q4v_groups<K, 3>(j, xr, n0, n1, r0);
  // 4 rows over 4 groups spill their 16 accumulators; over 2 they stay in registers. Cold 49152x576 Q4_1
  // T = 4, three rounds: 506-606 against 657-766 us; in the default model (Q4_1, Q8_0 head) a 4-node
  // forward, the two alternating in one process: 4.34 / 5.27 / 10.27-10.46 ms against 4.36 / 5.28 /
  // 10.26-10.53 (level). 3 rows over 2 groups measured level with 4, so they keep 4 streams.
  if (rest == 4) return q4v_groups<K, 4, kQ4WideStreams>(j, xr, n0, n1, r0);
  // More rows: the first pass streams 2 column groups from memory at once for up to kQ4WideRows rows,
  // and the others find each group in cache (K / 32 blocks: 10 KB at K = 576) one group at a time, 8
  // rows a pass sharing each block's unpack. Up to 8 rows x 2 groups keep their accumulators in
  // registers (4 groups x 4 rows spill), so the stream overlaps all their arithmetic: cold, 2 threads,
  // T = 8: Q4_1 576x1536 36-37 -> 30 us, Q8_0 49152x576 1,300 -> 1,150-1,180; T = 5-7 (a pass of 4 rows
  // over 4 groups, then 1-3 rows from cache, before) cold Q8_0 49152x576 T = 7 1,359-1,744 -> 1,094-1,125
  // us, and a default-model verify of 5 / 6 / 7 nodes 6.56-6.61 / 7.35-7.94 / 8.18-8.34 -> 5.77-5.99 /
  // 6.54-6.74 / 7.26-7.49 ms.
  // first: the rows of the streaming pass; the rest of each group's rows follow from cache.
  auto all_rows = [&](auto first) {
    return [&, first](const auto& ns) {
      constexpr int S = int(sizeof(ns) / sizeof(ns[0])), F = decltype(first)::value;
      q4v_rows<K, F, S>(j, xr, ns, r0);
      for (int g = 0; g < S; ++g) q4v_row_passes<K>(j, xr, ns[g], r0 + F);
    };
  };
  auto wide = [&](auto first) { walk_group_streams<kQ4WideStreams>(n0, n1, all_rows(first)); };
  switch (rest) {
    case 5: return wide(std::integral_constant<int, 5>{});
    case 6: return wide(std::integral_constant<int, 6>{});
    case 7: return wide(std::integral_constant<int, 7>{});
    default: return wide(std::integral_constant<int, kQ4WideRows>{});
  }
}

// Every row on VNNI over the pack (the AVX-512 table's Q4 path at any T, both tables' Q8_0 path at
// T <= q8pack_max_rows); columns past N / 16 * 16, and every column when there is no pack, on the
// GGUF path `Fallback`. Same bits either way.
template <WKind K, ColsFn Fallback>
void cols_vnni_packed(const Job& j, int64_t n0, int64_t n1) {
  const int64_t full = j.wpack ? n0 + (n1 - n0) / 16 * 16 : n0;
  if (full > n0) {
    uint8_t* base = thread_scratch<kScratchKernel>(size_t(j.t * (j.k / 32)) * 12);
    q4v_cols<K>(j, q4_rows<K>(j, base), n0, full, 0);
  }
  if (full < n1) Fallback(j, full, n1);
}
