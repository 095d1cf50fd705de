// AMX kernel table: the AVX-512 table, plus int8 tile matmuls for the legacy 32-block types when
// several activation rows share the weights (Q8_0 from T = 2, the repacked 4- and 5-bit types from
// 16 rows). A tile product gives the exact
// per-block integer dots of 16 weight rows x 16 activation rows; the float epilogue then applies
// dot_generic.h's per-block operations in block order, so the bits equal every other path.
#include "cpu/quant/kernels.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <immintrin.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "cpu/quant/isa.h"
#include "cpu/quant/kquant_sums.h"
#include "cpu/quant/q4pack.h"
#include "cpu/quant/scratch.h"

#pragma GCC push_options
// GCC 12 flags the intrinsics' own `__Y = __Y` placeholders under a target pragma.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c,bmi2,amx-tile,amx-int8")
namespace eyas::cpu::quant {
namespace amx_impl {
static inline float H2F(uint16_t h) { return _cvtsh_ss(h); }  // F16C: exact, as h2f
#include "cpu/quant/kdots_avx512.h"
#include "cpu/quant/dot_generic.h"
#include "cpu/quant/simd_avx512.h"
#include "cpu/quant/q4rows.h"
#include "cpu/quant/q4pack_avx512.h"
#include "cpu/quant/kquant_avx512.h"
#include "cpu/quant/kqpack_avx512.h"

// Q8_0's tile path from this many activation rows: it reads its weights as A tiles with no
// unpacking (T = 2..16 cost about 2x a T = 1 pass from DRAM) unless the call has the VNNI pack
// (T <= q8pack_max_rows). Q4_0/Q4_1/Q5_0/Q5_1 take the packed path below (activations as A tiles) from T = 16.
constexpr int64_t kAmxMinRowsQ8 = 2;

// Activations laid out for B tiles: per block b and group of 16 rows g, 8 rows (k/4) of
// 16 rows x 4 bytes; plus per-block scales transposed to [b][row] (rows padded to 16).
struct Prep {
  int8_t* vnni;
  float* dx;
  int64_t groups, tp;
};


// Whether `prepare` lays the activations out as B tiles for this call (Q8_0 only: the 4- and 5-bit
// types use their repack as B tiles and the activations as A tiles).
static bool b_tile_path(WKind k, int64_t t) { return k == kQ8_0 && t >= kAmxMinRowsQ8; }

void prepare(Job& job, WKind kind) {
  job.extra = nullptr;
  if (!b_tile_path(kind, job.t) || job.n < 16) return;
  if (kind == kQ8_0 && job.wpack) return;  // the VNNI pack path streams faster (see q8pack_max_rows)
  thread_local Prep prep;
  const int64_t nb = job.k / 32, groups = (job.t + 15) / 16, tp = groups * 16;
  const size_t vbytes = size_t(nb * groups * 512), fbytes = size_t(nb * tp * 4);
  uint8_t* base = thread_scratch<kScratchAmxPrep>(vbytes + fbytes);
  prep = {reinterpret_cast<int8_t*>(base), reinterpret_cast<float*>(base + vbytes), groups, tp};
  std::memset(base, 0, vbytes + fbytes);  // padded rows contribute zeros
  for (int64_t t = 0; t < job.t; ++t) {
    const int8_t* q = job.act.qs + t * job.k;
    const int64_t g = t / 16, c = t % 16;
    for (int64_t b = 0; b < nb; ++b) {
      int8_t* tile = prep.vnni + (b * groups + g) * 512;
      for (int r = 0; r < 8; ++r) std::memcpy(tile + r * 64 + c * 4, q + b * 32 + r * 4, 4);
      prep.dx[b * tp + t] = job.act.d[t * job.act.d_per_row + b];
    }
  }
  job.extra = &prep;
}

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Q8_0, one 16-column tile (its GGUF rows are A tiles as they stand), every row group: acc[i][t]
// over blocks in order. The 4- and 5-bit types take the repacked path below.
template <WKind K>
static void tile_cols(const Job& j, const Prep& p, int64_t n0, bool prefetch_next, float* dw) {
  static_assert(K == kQ8_0, "the 4- and 5-bit types read their repack (cols_amx_q4p)");
  constexpr int bytes = kQ8_0Bytes;
  const int64_t nb = j.k / 32;
  const uint8_t* w = j.w + n0 * j.wrow;
  // Scales of the 16 rows, all blocks, converted once and reused by every row group.
  const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(int32_t(j.wrow)));
  for (int64_t b = 0; b < nb; ++b) {  // d of 16 rows: the low half of one 4-byte gather per row
    const __m512i dm = _mm512_i32gather_epi32(rows, w + b * bytes, 1);
    _mm512_storeu_ps(dw + b * 16, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm)));
  }
  alignas(64) int32_t cbuf[2][16][16] = {};  // columns past a narrow C stay zero
  alignas(64) float obuf[16][16];
  for (int64_t g = 0; g < p.groups; ++g) {
    __m512 acc[16];
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
    // Two blocks in flight: the tile products of blocks b+1 and b+2 run during block b's epilogue.
    // Tile ids are immediates, hence the parity branches (C 0/1, A 2/3, B 4/5).
    auto issue = [&](int64_t b) {
      const int8_t* bt = p.vnni + (b * p.groups + g) * 512;
      if (b & 1) {
        _tile_zero(1);
        _tile_loadd(5, bt, 64);
        _tile_loadd(3, w + b * bytes + 2, long(j.wrow));
        _tile_dpbssd(1, 3, 5);
      } else {
        _tile_zero(0);
        _tile_loadd(4, bt, 64);
        _tile_loadd(2, w + b * bytes + 2, long(j.wrow));
        _tile_dpbssd(0, 2, 4);
      }
    };
    // A tile store reaches vector loads late: block b+1 is stored while block b's sums,
    // stored one step earlier, go through the epilogue.
    auto store = [&](int64_t b) {
      if (b & 1)
        _tile_stored(1, cbuf[1], 64);
      else
        _tile_stored(0, cbuf[0], 64);
    };
    issue(0);
    if (nb > 1) issue(1);
    store(0);
    for (int64_t b = 0; b < nb; ++b) {
      if (g == 0 && prefetch_next) {  // the next 16 rows are read column-block-wise: fetch them early
        const size_t tile = 16 * j.wrow, lo = tile * size_t(b) / size_t(nb), hi = tile * size_t(b + 1) / size_t(nb);
        const char* next = reinterpret_cast<const char*>(w) + tile;
        for (size_t off = lo & ~size_t(63); off < hi; off += 64) _mm_prefetch(next + off, _MM_HINT_T0);
      }
      const __m512 dx = _mm512_loadu_ps(p.dx + b * p.tp + g * 16);
      auto rows = [&](int i0, int i1) {
        for (int i = i0; i < i1; ++i) {
          const __m512i iv = _mm512_load_si512(cbuf[b & 1][i]);
          acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(iv), _mm512_mul_ps(_mm512_set1_ps(dw[b * 16 + i]), dx), acc[i]);
        }
      };
      // The tile instructions sit between parts of the epilogue: issued back to back they stall
      // the vector work (see q4p_pass).
      rows(0, 4);
      if (b + 1 < nb) store(b + 1);
      rows(4, 8);
      if (b + 2 < nb) issue(b + 2);
      rows(8, 16);
    }
    for (int i = 0; i < 16; ++i) _mm512_store_ps(obuf[i], acc[i]);
    const int64_t rows = std::min<int64_t>(16, j.t - g * 16);
    for (int64_t t = 0; t < rows; ++t)
      for (int i = 0; i < 16; ++i) j.y[(g * 16 + t) * j.n + n0 + i] = obuf[i][t];
  }
}

template <WKind K, ColsFn Fallback>
void cols_amx(const Job& j, int64_t n0, int64_t n1) {
  const Prep* p = static_cast<const Prep*>(j.extra);
  const int64_t full = p ? n0 + (n1 - n0) / 16 * 16 : n0;
  if (full > n0) {
    TileConfig cfg;
    // A single short row group narrows C and B: tile stores bound the speed, and unused
    // C columns (rows t >= T) are never read back into outputs.
    const uint16_t width = uint16_t(4 * (p->groups == 1 ? j.t : 16));
    for (int c = 0; c < 2; ++c) {
      cfg.rows[0 + c] = 16, cfg.colsb[0 + c] = width;  // C: 16 weight rows x up to 16 activation rows of int32
      cfg.rows[2 + c] = 16, cfg.colsb[2 + c] = 32;     // A: 16 weight rows x one block (32 bytes)
      cfg.rows[4 + c] = 8, cfg.colsb[4 + c] = width;   // B: 8 quads of k x up to 16 activation rows x 4 bytes
    }
    _tile_loadconfig(&cfg);
    float* dw = reinterpret_cast<float*>(thread_scratch<kScratchKernel>(size_t(j.k / 32) * 64));  // d of 16 rows per block
    for (int64_t n = n0; n < full; n += 16) tile_cols<K>(j, *p, n, n + 16 < full, dw);
    _tile_release();
  }
  if (full < n1) Fallback(j, full, n1);
}

// ---- Q4_0 / Q4_1 from the repacked weights (q4pack.h), activations as the A tile ----------------
// C = X·Wᵀ comes out as [activation rows][16 weight columns], so the float epilogue is one 16-lane
// step per activation row, block and 16 columns, with the weights' scales one vector per block:
// the floor the bit-exact recipe allows (6 vector ops per step for Q4_1, 4 for Q4_0 / Q5_0). A pass
// takes G column groups: their B tiles are unpacked once (AND and shift of contiguous 64-byte loads)
// and serve every 16-row group of activations; G C tiles keep the tile unit busy during the epilogue.
// Q4_0 / Q5_0 unpack their quants less the zero point (8, 16) as signed bytes, so a signed product
// gives dot_generic.h's integer I - zp * sum(x) itself: no per-step subtraction of the offset.

template <WKind K, int G>
static void q4p_pass(const Job& j, const Q4Rows& xr, int64_t n, int64_t rows, uint8_t* buf) {
  constexpr bool has_min = K == kQ4_1 || K == kQ5_1, five = K == kQ5_0 || K == kQ5_1;
  constexpr int8_t zero_point = has_min ? 0 : five ? 16 : 8;  // taken out of Q4_0 / Q5_0 quants as they unpack
  const int64_t nb = j.k / 32;
  // B tiles [nb][8][64] of the G groups, then their scales as f32 [nb][16] (d, then m). Block b is
  // unpacked during block b-1 of the first row group (its loads overlap the tile work), then
  // reused by the other row groups.
  uint8_t* bt[G];
  float *dw[G], *mw[G];
  for (int g = 0; g < G; ++g) {
    bt[g] = buf + size_t(g) * size_t(nb) * 640;
    dw[g] = reinterpret_cast<float*>(bt[g] + nb * 512);
    mw[g] = dw[g] + nb * 16;
  }
  constexpr Q4PackAt at = q4pack_at(K);  // Q4_0's 288-byte blocks are not 64-byte aligned: loads are unaligned
  const uint8_t* src = j.wpack + size_t(n / 16) * size_t(nb) * at.bytes;
  auto unpack = [&](int64_t b) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int g = 0; g < G; ++g) {
      const uint8_t* s = src + size_t(g * nb + b) * at.bytes;
      uint8_t* o = bt[g] + b * 512;
      __m512i h = _mm512_setzero_si512();
      if constexpr (five) h = _mm512_loadu_si512(s + at.qh);
      for (int r = 0; r < 4; ++r) {
        const __m512i v = _mm512_loadu_si512(s + 64 * r);
        __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        if constexpr (five) {
          lo = _mm512_or_si512(lo, q5_fifth_bits(h, r, false));
          hi = _mm512_or_si512(hi, q5_fifth_bits(h, r, true));
        }
        if constexpr (zero_point != 0) {
          lo = _mm512_sub_epi8(lo, _mm512_set1_epi8(zero_point));
          hi = _mm512_sub_epi8(hi, _mm512_set1_epi8(zero_point));
        }
        _mm512_store_si512(o + 64 * r, lo);
        _mm512_store_si512(o + 64 * (r + 4), hi);
      }
      _mm512_store_ps(dw[g] + b * 16, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + at.d))));
      if constexpr (has_min)
        _mm512_store_ps(mw[g] + b * 16, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + at.m))));
    }
  };
  unpack(0);
  // The next G groups' packed blocks follow this pass's (nullptr past the weight's last group).
  const uint8_t* next = n + 32 * G <= j.n / 16 * 16 ? j.wpack + size_t(n / 16 + G) * size_t(nb) * at.bytes : nullptr;
  alignas(64) int32_t cbuf[2][G][16][16];
  alignas(64) float acc[16][G][16];
  constexpr int tg = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += tg) {
    for (int t = 0; t < tg; ++t)
      for (int g = 0; g < G; ++g) _mm512_store_ps(acc[t][g], _mm512_setzero_ps());
    // dot_generic.h's block step for rows [t0, t1) of block b (weight scales in dwv/mwv).
    __m512 dwv[G], mwv[G];
    auto scales = [&](int64_t b) {
      for (int g = 0; g < G; ++g) {
        dwv[g] = _mm512_load_ps(dw[g] + b * 16);
        mwv[g] = has_min ? _mm512_load_ps(mw[g] + b * 16) : _mm512_setzero_ps();
      }
    };
    auto epilogue = [&](int64_t b, int t0, int t1) {
      const int32_t(*c)[16][16] = cbuf[b & 1];
      for (int t = t0; t < t1; ++t) {
        const int64_t rb = (r0 + t) * nb + b;
        const __m512 bdx = _mm512_set1_ps(xr.dx[rb]);
        for (int g = 0; g < G; ++g) {
          const __m512i iv = _mm512_load_si512(c[g][t]);  // Q4_0 / Q5_0: the offset is out already
          __m512 a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(iv), _mm512_mul_ps(dwv[g], bdx), _mm512_load_ps(acc[t][g]));
          if constexpr (has_min) a = _mm512_fmadd_ps(mwv[g], _mm512_set1_ps(xr.dsx[rb]), a);
          _mm512_store_ps(acc[t][g], a);
        }
      }
    };
    // Tile ids are immediates: C 0..G-1, A 3, B 4..3+G (signed for Q4_0 / Q5_0: dpbssd; else dpbsud).
    // Block b's products are computed and stored while block b-1's, stored one step earlier, go
    // through the epilogue; the tile instructions are spread between quarters of that epilogue
    // (issued back to back they stall the vector work: ~20% slower in a microbenchmark).
    const int8_t* xq = j.act.qs + r0 * j.k;
    for (int64_t b = 0; b < nb; ++b) {
      int32_t(*cb)[16][16] = cbuf[b & 1];
      if (r0 == 0 && next) {  // stream the next pass's weights in while this one computes
        const char* p = reinterpret_cast<const char*>(next) + b * G * at.bytes;
        for (int off = 0; off < G * at.bytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T0);
      }
      if (r0 == 0 && b + 1 < nb) unpack(b + 1);
      const bool prev = b > 0;
      if (prev) scales(b - 1);
      _tile_loadd(3, xq + b * 32, long(j.k));
      _tile_zero(0);
      _tile_loadd(4, bt[0] + b * 512, 64);
      if constexpr (zero_point != 0) _tile_dpbssd(0, 3, 4); else _tile_dpbsud(0, 3, 4);
      if (prev) epilogue(b - 1, 0, 4);
      if constexpr (G > 1) {
        _tile_zero(1);
        _tile_loadd(5, bt[1] + b * 512, 64);
        if constexpr (zero_point != 0) _tile_dpbssd(1, 3, 5); else _tile_dpbsud(1, 3, 5);
      }
      if (prev) epilogue(b - 1, 4, 8);
      if constexpr (G > 2) {
        _tile_zero(2);
        _tile_loadd(6, bt[2] + b * 512, 64);
        if constexpr (zero_point != 0) _tile_dpbssd(2, 3, 6); else _tile_dpbsud(2, 3, 6);
      }
      if (prev) epilogue(b - 1, 8, 12);
      _tile_stored(0, cb[0], 64);
      if constexpr (G > 1) _tile_stored(1, cb[1], 64);
      if constexpr (G > 2) _tile_stored(2, cb[2], 64);
      if (prev) epilogue(b - 1, 12, 16);
    }
    scales(nb - 1);
    epilogue(nb - 1, 0, tg);
    for (int t = 0; t < tg; ++t)
      for (int g = 0; g < G; ++g) _mm512_storeu_ps(j.y + (r0 + t) * j.n + n + 16 * g, _mm512_load_ps(acc[t][g]));
  }
}

// With a packed weight: whole 16-column groups; whole 16-row groups of activations in tile passes
// of up to 48 columns once T >= kQ4TileRows (a tile product costs the same for fewer rows, so
// below that VNNI is faster), the other rows on VNNI. The columns of a partial group (past
// N / 16 * 16), and every column when there is no pack, take the GGUF VNNI path. All give the
// same bits.
constexpr int64_t kQ4TileRows = 16;

template <WKind K>
void cols_amx_q4p(const Job& j, int64_t n0, int64_t n1) {
  const int64_t full = j.wpack ? n0 + (n1 - n0) / 16 * 16 : n0;
  if (full > n0) {
    const int64_t nb = j.k / 32, rb = j.t * nb;
    uint8_t* base = thread_scratch<kScratchKernel>(3 * size_t(nb) * 640 + size_t(rb) * 12 + 128);
    const Q4Rows xr = q4_rows<K>(j, base + 3 * size_t(nb) * 640);
    const int64_t tile_rows = j.t >= kQ4TileRows ? j.t / 16 * 16 : 0;
    if (tile_rows > 0) {
      TileConfig cfg;
      for (int c = 0; c < 3; ++c) cfg.rows[c] = 16, cfg.colsb[c] = 64;      // C: 16 rows x 16 int32
      cfg.rows[3] = 16, cfg.colsb[3] = 32;                                   // A: 16 rows x one block
      for (int c = 0; c < 3; ++c) cfg.rows[4 + c] = 8, cfg.colsb[4 + c] = 64;  // B: 8 k-quads x 16 x 4
      _tile_loadconfig(&cfg);
      int64_t n = n0;
      for (; n + 48 <= full; n += 48) q4p_pass<K, 3>(j, xr, n, tile_rows, base);
      if (full - n == 32) q4p_pass<K, 2>(j, xr, n, tile_rows, base);
      if (full - n == 16) q4p_pass<K, 1>(j, xr, n, tile_rows, base);
      _tile_release();
    }
    if (tile_rows < j.t) q4v_cols<K>(j, xr, n0, full, tile_rows);
  }
  if (full < n1) cols_q4x4<K>(j, full, n1);
}

#include "cpu/quant/kqtiles_amx.h"

}  // namespace amx_impl
}  // namespace eyas::cpu::quant
#pragma GCC pop_options

namespace eyas::cpu::quant {
const Table* table_amx() {
  static const Table tb = [] {
    using namespace amx_impl;
    Table t = *table_avx512();
    t.isa = Isa::Amx;
    t.cols[kQ8_0] = &cols_amx<kQ8_0, &cols_vnni_packed<kQ8_0, &cols_q8_0>>;
    // Cold, 2 threads, 49152x576 (the default model's head): the pack streams T = 8 in 1,390-1,436 us against
    // the tiles' 1,957-2,133 (T = 1: 1,130-1,190), T = 12 1,996-2,009 against 1,993-2,164; tiles win from 16.
    t.q8pack_max_rows = 12;
    t.cols[kQ4_0] = &cols_amx_q4p<kQ4_0>;
    t.cols[kQ4_1] = &cols_amx_q4p<kQ4_1>;
    t.q4pack_min_rows = 1;
    t.cols[kQ5_0] = &cols_amx_q4p<kQ5_0>;
    t.cols[kQ5_1] = &cols_amx_q4p<kQ5_1>;
    t.q5pack = true;
    t.cols[kQ4_K] = &cols_amx_kq<kQ4_K>;
    t.cols[kQ5_K] = &cols_amx_kq<kQ5_K>;
    t.cols[kQ6_K] = &cols_amx_kq<kQ6_K>;
    t.prepare = &prepare;
    return t;
  }();
  return table_avx512() ? &tb : nullptr;
}
}  // namespace eyas::cpu::quant
#else
namespace eyas::cpu::quant {
const Table* table_amx() { return nullptr; }
}  // namespace eyas::cpu::quant
#endif
