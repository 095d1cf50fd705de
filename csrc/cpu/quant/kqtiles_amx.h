// AMX int8 tile passes over the K-quant packs (q4pack.h) for whole 16-row groups of activations;
// included in kernels_amx.cpp after kqpack_avx512.h. A tile product cannot apply a per-column,
// per-sub-block scale, and storing one product per sub-block for a vpmulld epilogue costs more than
// the VNNI path saves. So the scales go into the weights as they are unpacked, split into pieces
// small enough that every byte product still fits a byte:
//   Q4_K / Q5_K: sc = 8h + l (l, h < 8): q*l and q*h <= 31 * 7, so i1 = C_l + 8 C_h;
//   Q6_K: sc = 16h + l (l < 16, -8 <= h < 8) and q - 32 = 16qh + ql (ql < 16, -2 <= qh < 2):
//         sc (q - 32) = l ql + 16 (l qh + h ql) + 256 h qh, each product within a byte,
// and a 256-block's C tiles accumulate over its four 64-element steps. The integers equal
// dot_generic.h's (i1 for Q4_K / Q5_K; i1 - 32 * (scales . sums) for Q6_K) and the float epilogue
// is kblock_term's, per block, added in block order: the bits of every other path.
// (No include guard: included once, in the AMX TU.)

// Tile products (1 KB B tiles) per 256-block: 4 steps x {l, h}; Q6_K 4 steps x 4 pieces.
template <WKind K>
constexpr int kqt_products() { return K == kQ6_K ? 16 : 8; }

// u16 lanes 2i, 2i + 1 = the low word of int32 lane i (column i's factor for its 4 bytes of a line).
static inline __m512i kqt_pair16(__m512i v) {
  return _mm512_or_si512(_mm512_and_si512(v, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(v, 16));
}

// Int32 lane i's low byte in each of column i's 4 bytes.
static inline __m512i kqt_bytes(__m512i v) {
  return _mm512_mullo_epi32(_mm512_and_si512(v, _mm512_set1_epi32(0xFF)), _mm512_set1_epi32(0x01010101));
}

// Q4_K / Q5_K pack block s -> B tiles out[2c + {0: l, 1: h}] (rows 0-7: sub-block 2c, the low
// nibbles of lines 512c + 64r; rows 8-15: sub-block 2c + 1, the high nibbles). Unsigned quants of at
// most 5 bits times a 3-bit factor never carry into the next byte, so one 16-bit multiply does a line.
template <WKind K>
static inline void kqt_unpack45(const uint8_t* s, uint8_t* out) {
  constexpr KPackAt at = kpack_at(K);
  const __m512i m4 = _mm512_set1_epi8(0x0F), m7 = _mm512_set1_epi32(7);
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    __m512i f[2][2];  // [sub-block 2c + high][l, h]
    for (int high = 0; high < 2; ++high) {
      const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + at.sc + 16 * (2 * c + high))));
      f[high][0] = kqt_pair16(_mm512_and_si512(sc, m7));
      f[high][1] = kqt_pair16(_mm512_srli_epi32(sc, 3));
    }
    uint8_t* tl = out + (2 * c) * 1024;
    uint8_t* th = tl + 1024;
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) {
      const __m512i v = _mm512_loadu_si512(s + kpack_ql(K, c, r));
      __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
      if constexpr (K == kQ5_K) {
        const __m512i h = _mm512_loadu_si512(s + kpack_qh(r));
        lo = _mm512_or_si512(lo, k5_fifth_bits(h, 2 * c));
        hi = _mm512_or_si512(hi, k5_fifth_bits(h, 2 * c + 1));
      }
      _mm512_store_si512(tl + 64 * r, _mm512_mullo_epi16(lo, f[0][0]));
      _mm512_store_si512(tl + 64 * (8 + r), _mm512_mullo_epi16(hi, f[1][0]));
      _mm512_store_si512(th + 64 * r, _mm512_mullo_epi16(lo, f[0][1]));
      _mm512_store_si512(th + 64 * (8 + r), _mm512_mullo_epi16(hi, f[1][1]));
    }
  }
}

// Q6_K pack block s -> B tiles out[4 st + piece] for steps st = 2 h6 + half (elements 128 h6 + 64 half
// + 0..63: rows 8e + r hold plane (h6, e, r), nibble `half`), pieces l ql (unsigned), l qh, h ql, h qh.
// Each is an unsigned product of at most 15 x 15 (no carry between the bytes of one 16-bit multiply)
// with the offsets of qh = qh2 - 2 and h = h8 - 8 taken out by byte subtractions, mod 256:
// l qh = l qh2 - 2l, h ql = h8 ql - 8 ql, h qh = h8 qh2 - 8 qh2 - 2h.
static inline void kqt_unpack6(const uint8_t* s, uint8_t* out) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), m3 = _mm512_set1_epi8(0x03);
  for (int h6 = 0; h6 < 2; ++h6)
    for (int half = 0; half < 2; ++half) {
      uint8_t* t = out + (4 * (2 * h6 + half)) * 1024;
      for (int e = 0; e < 2; ++e)
        for (int rr = 0; rr < 2; ++rr) {
          const __m512i sc = k6_scale(s, 8 * h6 + 2 * e + rr + 4 * half);  // int32 lanes, -128..127
          const __m512i l = _mm512_and_si512(sc, _mm512_set1_epi32(15)), h = _mm512_srai_epi32(sc, 4);
          const __m512i fl = kqt_pair16(l), fh8 = kqt_pair16(_mm512_add_epi32(h, _mm512_set1_epi32(8)));
          const __m512i l2 = kqt_bytes(_mm512_add_epi32(l, l)), h2 = kqt_bytes(_mm512_add_epi32(h, h));
#pragma GCC unroll 4
          for (int r = 4 * rr; r < 4 * rr + 4; ++r) {
            const __m512i q = k6_quants(s, h6, e, r, half);
            const __m512i ql = _mm512_and_si512(q, m4), qh2 = _mm512_and_si512(_mm512_srli_epi16(q, 4), m3);
            const int row = 64 * (8 * e + r);
            _mm512_store_si512(t + row, _mm512_mullo_epi16(ql, fl));
            _mm512_store_si512(t + 1024 + row, _mm512_sub_epi8(_mm512_mullo_epi16(qh2, fl), l2));
            _mm512_store_si512(t + 2048 + row, _mm512_sub_epi8(_mm512_mullo_epi16(ql, fh8), _mm512_slli_epi16(ql, 3)));
            _mm512_store_si512(t + 3072 + row, _mm512_sub_epi8(_mm512_sub_epi8(_mm512_mullo_epi16(qh2, fh8), _mm512_slli_epi16(qh2, 3)), h2));
          }
        }
    }
}

// 16 columns from n, rows [r0, r1) in tile groups of 16 R rows (r1 - r0 a multiple of 16 R). The
// column group's pack is unpacked into bt (nb x kqt_products x 1 KB) during the first row group, block
// by block, unless `unpacked`; next (or nullptr): the following group's pack, requested into L2
// meanwhile. Block b's C tiles are stored while block b - 1's, stored one block earlier, go through
// the float epilogue, spread between the tile steps so tile and vector work overlap. Tile loads bound
// the speed (~4 ns each on an AMX Xeon VM against ~8 ns per product), so Q4_K / Q5_K take two row
// groups (R = 2) and each B tile feeds two products: 8.6 against 12.9-15.7 ns per product in a
// microbenchmark. Tile ids are immediates: Q4_K / Q5_K C 0 (l), 1 (h) of rows 0-15, 2, 3 of rows 16-31,
// A 4, 5, B 6, 7; Q6_K (R = 1: 3 C tiles) C 0 (x1), 1 (x16), 2 (x256), A 3, B 4-7.
template <WKind K, int R>
static void kqt_pass(const Job& j, const int32_t* pairs, int64_t n, int64_t r0, int64_t r1, uint8_t* bt, bool unpacked,
                     const uint8_t* next) {
  static_assert(R == 1 || (R == 2 && K != kQ6_K), "Q6_K's three C tiles a row group leave room for one");
  constexpr int P = kqt_products<K>(), C = K == kQ6_K ? 3 : 2, pair_n = kq_pairs_per_block(K), rows = 16 * R;
  constexpr int block_bytes = K == kQ6_K ? kQ6KPackBlockBytes : kpack_at(K).bytes;
  const int64_t nb = j.k / 256;
  const uint8_t* src = j.wpack + size_t(n / 16) * size_t(nb) * block_bytes;
  alignas(64) int32_t cbuf[2][R][C][16][16];
  alignas(64) float acc[rows][16];
  for (int64_t g0 = r0; g0 < r1; g0 += rows) {
    for (int t = 0; t < rows; ++t) _mm512_store_ps(acc[t], _mm512_setzero_ps());
    // acc += block b's float terms for rows [t0, t1) of this group.
    auto epilogue = [&](int64_t b, int t0, int t1) {
      const uint8_t* s = src + b * block_bytes;
      if constexpr (K == kQ6_K) {
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + kQ6PackD)));
        for (int t = t0; t < t1; ++t) {
          const int32_t(*c)[16] = cbuf[b & 1][0][0] + t;
          const __m512i i = _mm512_add_epi32(_mm512_load_si512(c[0]), _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(c[16]), 4),
                                                                                       _mm512_slli_epi32(_mm512_load_si512(c[32]), 8)));
          const __m512 dx = _mm512_set1_ps(j.act.d[(g0 + t) * j.act.d_per_row + b]);
          _mm512_store_ps(acc[t], _mm512_add_ps(_mm512_load_ps(acc[t]), _mm512_mul_ps(_mm512_cvtepi32_ps(i), _mm512_mul_ps(dw, dx))));
        }
      } else {
        const KqBlockTerm<K> term(s);
        for (int t = t0; t < t1; ++t) {
          const int32_t(*c)[16][16] = cbuf[b & 1][t / 16];
          const __m512i i1 = _mm512_add_epi32(_mm512_load_si512(c[0][t % 16]), _mm512_slli_epi32(_mm512_load_si512(c[1][t % 16]), 3));
          const __m512 pv = term(pairs + ((g0 + t) * nb + b) * pair_n, j.act.d[(g0 + t) * j.act.d_per_row + b], i1);
          _mm512_store_ps(acc[t], _mm512_add_ps(_mm512_load_ps(acc[t]), pv));
        }
      }
    };
    const int8_t* xq = j.act.qs + g0 * j.k;
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* bb = bt + size_t(b) * P * 1024;
      if (g0 == r0 && !unpacked) {
        const uint8_t* s = src + b * block_bytes;
        kq_prefetch_next<block_bytes>(s);
        if (next) kq_prefetch_block<block_bytes>(next + b * block_bytes);
        if constexpr (K == kQ6_K) kqt_unpack6(s, bb);
        else kqt_unpack45<K>(s, bb);
      }
      const bool prev = b > 0;
      _tile_zero(0);
      _tile_zero(1);
      if constexpr (K == kQ6_K || R == 2) _tile_zero(2);
      if constexpr (R == 2) _tile_zero(3);
#pragma GCC unroll 4
      for (int st = 0; st < 4; ++st) {
        const int8_t* a = xq + b * 256 + 64 * st;
        if constexpr (K == kQ6_K) {
          const uint8_t* w = bb + 4 * st * 1024;
          _tile_loadd(3, a, long(j.k));
          _tile_loadd(4, w, 64);
          _tile_dpbsud(0, 3, 4);
          _tile_loadd(5, w + 1024, 64);
          _tile_dpbssd(1, 3, 5);
          _tile_loadd(6, w + 2048, 64);
          _tile_dpbssd(1, 3, 6);
          _tile_loadd(7, w + 3072, 64);
          _tile_dpbssd(2, 3, 7);
        } else {
          const uint8_t* w = bb + 2 * st * 1024;
          _tile_loadd(4, a, long(j.k));
          _tile_loadd(6, w, 64);
          _tile_dpbsud(0, 4, 6);
          if constexpr (R == 2) {
            _tile_loadd(5, a + 16 * j.k, long(j.k));
            _tile_dpbsud(2, 5, 6);
          }
          _tile_loadd(7, w + 1024, 64);
          _tile_dpbsud(1, 4, 7);
          if constexpr (R == 2) _tile_dpbsud(3, 5, 7);
        }
        if (prev) epilogue(b - 1, rows / 4 * st, rows / 4 * (st + 1));
      }
      if constexpr (K == kQ6_K) {
        _tile_stored(0, cbuf[b & 1][0][0], 64);
        _tile_stored(1, cbuf[b & 1][0][1], 64);
        _tile_stored(2, cbuf[b & 1][0][2], 64);
      } else {
        _tile_stored(0, cbuf[b & 1][0][0], 64);
        _tile_stored(1, cbuf[b & 1][0][1], 64);
        if constexpr (R == 2) {
          _tile_stored(2, cbuf[b & 1][1][0], 64);
          _tile_stored(3, cbuf[b & 1][1][1], 64);
        }
      }
    }
    epilogue(nb - 1, 0, rows);
    for (int t = 0; t < rows; ++t) _mm512_storeu_ps(j.y + (g0 + t) * j.n + n, _mm512_load_ps(acc[t]));
  }
}

// Tile passes from this many rows: a tile product costs the same for fewer, and each column group's
// unpack is shared by T / 16 row groups. Q6_K's unpack (four pieces a line) needs many: 2 threads,
// 8192x2048 / 2048x8192 on the AMX VM, tiles against VNNI, T = 16 3.3-3.5 against 2.1-2.3 ms, T = 64
// 8.1-8.7 against 6.7-8.9, T = 128 12.2-16.2 against 10.8-16.2, T = 256 23.3-23.7 against 23.4-31.4.
template <WKind K>
constexpr int64_t kqt_min_rows() { return K == kQ6_K ? 128 : 16; }

// With the pack and T >= kqt_min_rows: whole 16-row groups on tiles, each column group's other rows
// on VNNI right after (its pack still in cache); otherwise, and for the columns past N / 16 * 16,
// the AVX-512 paths. All give the same bits.
template <WKind K>
void cols_amx_kq(const Job& j, int64_t n0, int64_t n1) {
  if (!j.wpack || j.t < kqt_min_rows<K>()) return cols_kq_packed<K>(j, n0, n1);
  const int64_t full = n0 + (n1 - n0) / 16 * 16, tile_rows = j.t / 16 * 16, nb = j.k / 256;
  constexpr int block_bytes = K == kQ6_K ? kQ6KPackBlockBytes : kpack_at(K).bytes;
  if (full > n0) {
    const int32_t* pairs = kq_sum_pairs<K>(j);
    uint8_t* bt = thread_scratch<kScratchUnpacked>(size_t(nb) * kqt_products<K>() * 1024);
    TileConfig cfg;
    for (int c = 0; c < 8; ++c) cfg.rows[c] = 16, cfg.colsb[c] = 64;  // every tile 16 x 64 bytes
    _tile_loadconfig(&cfg);
    for (int64_t n = n0; n < full; n += 16) {
      const uint8_t* next = n + 16 < full ? j.wpack + size_t(n / 16 + 1) * size_t(nb) * block_bytes : nullptr;
      if constexpr (K == kQ6_K) {
        kqt_pass<K, 1>(j, pairs, n, 0, tile_rows, bt, false, next);
      } else {  // pairs of row groups, then a last one
        const int64_t pair_rows = tile_rows / 32 * 32;
        if (pair_rows > 0) kqt_pass<K, 2>(j, pairs, n, 0, pair_rows, bt, false, next);
        if (pair_rows < tile_rows) kqt_pass<K, 1>(j, pairs, n, pair_rows, tile_rows, bt, pair_rows > 0, next);
      }
      for_row_passes(tile_rows, j.t, [&](auto rows, int64_t r) { kq_rows<K, decltype(rows)::value>(j, pairs, n, r); });
    }
    _tile_release();
  }
  if (full < n1) cols_kquant_v<K>(j, full, n1);  // after: it reuses the kernel scratch
}
