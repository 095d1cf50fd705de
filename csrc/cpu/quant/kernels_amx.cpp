// AMX kernel table: the AVX-512 table, plus int8 tile matmuls for the legacy 32-block types when
// several activation rows share the weights (T >= kAmxMinRows). A tile product gives the exact
// per-block integer dots of 16 weight rows x 16 activation rows; the float epilogue then applies
// dot_generic.h's per-block operations in block order, so the bits equal every other path.
#include "cpu/quant/kernels.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <immintrin.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "cpu/quant/isa.h"
#include "cpu/quant/scratch.h"

#pragma GCC push_options
// GCC 12 flags the intrinsics' own `__Y = __Y` placeholders under a target pragma.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c,bmi2,amx-tile,amx-int8")
namespace eyas::cpu::quant {
namespace amx_impl {
static inline float H2F(uint16_t h) { return _cvtsh_ss(h); }  // F16C: exact, as h2f
#include "cpu/quant/kdots_avx512.h"
#include "cpu/quant/dot_generic.h"
#include "cpu/quant/simd_avx512.h"

// Tile paths from this many activation rows; Q8_0 reads its weights as A tiles with no unpacking,
// which pays from T = 2 (T = 2..16 cost about one T = 1 pass). Q4_0/Q4_1 switch to the
// activation-as-A layout up to kQ4SmallT rows, where its cheaper epilogue wins.
constexpr int64_t kAmxMinRows = 4;
constexpr int64_t kAmxMinRowsQ8 = 2;
constexpr int64_t kQ4SmallT = 8;

// Activations laid out for B tiles: per block b and group of 16 rows g, 8 rows (k/4) of
// 16 rows x 4 bytes; plus per-block scales and sums transposed to [b][row] (rows padded to 16).
struct Prep {
  int8_t* vnni;
  float* dx;
  int32_t* sx;
  int64_t groups, tp;
};


static bool legacy(WKind k) { return k == kQ8_0 || k == kQ4_0 || k == kQ4_1 || k == kQ5_0 || k == kQ5_1; }

// Whether `prepare` lays the activations out as B tiles for this call.
static bool b_tile_path(WKind k, int64_t t) {
  if (k == kQ8_0) return t >= kAmxMinRowsQ8;
  if (k == kQ4_0 || k == kQ4_1) return t > kQ4SmallT;
  return t >= kAmxMinRows;
}

void prepare(Job& job, WKind kind) {
  job.extra = nullptr;
  if (!legacy(kind) || !b_tile_path(kind, job.t) || job.n < 16) return;
  thread_local Prep prep;
  const int64_t nb = job.k / 32, groups = (job.t + 15) / 16, tp = groups * 16;
  const size_t vbytes = size_t(nb * groups * 512), fbytes = size_t(nb * tp * 4);
  uint8_t* base = thread_scratch<kScratchAmxPrep>(vbytes + 2 * fbytes);
  prep = {reinterpret_cast<int8_t*>(base), reinterpret_cast<float*>(base + vbytes),
          reinterpret_cast<int32_t*>(base + vbytes + fbytes), groups, tp};
  std::memset(base, 0, vbytes + 2 * fbytes);  // padded rows contribute zeros
  for (int64_t t = 0; t < job.t; ++t) {
    const int8_t* q = job.act.qs + t * job.k;
    const int64_t g = t / 16, c = t % 16;
    for (int64_t b = 0; b < nb; ++b) {
      int8_t* tile = prep.vnni + (b * groups + g) * 512;
      for (int r = 0; r < 8; ++r) std::memcpy(tile + r * 64 + c * 4, q + b * 32 + r * 4, 4);
      prep.dx[b * tp + t] = job.act.d[t * job.act.d_per_row + b];
      prep.sx[b * tp + t] = job.act.s[t * job.act.s_per_row + b];
    }
  }
  job.extra = &prep;
}

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Weights of 16 rows as A tiles: per block, 16 rows x 32 element bytes (0..31 for 4/5-bit types).
template <WKind K>
static void unpack_tile(const uint8_t* w, size_t wrow, int64_t nb, uint8_t* out) {
  constexpr int bytes = K == kQ4_0 ? kQ4_0Bytes : K == kQ4_1 ? kQ4_1Bytes : K == kQ5_0 ? kQ5_0Bytes : kQ5_1Bytes;
  constexpr int qs_off = K == kQ4_0 ? 2 : K == kQ4_1 ? 4 : K == kQ5_0 ? 6 : 8;
  for (int64_t b = 0; b < nb; ++b) {  // sequential stores: one tile after another
    for (int i = 0; i < 16; ++i) {
      const uint8_t* blk = w + i * wrow + b * bytes;
      uint8_t* o = out + (b * 16 + i) * 32;
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + qs_off));
      __m128i lo = _mm_and_si128(v, _mm_set1_epi8(15)), hi = _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(15));
      if constexpr (K == kQ5_0 || K == kQ5_1) {
        const uint32_t qh = rd32(blk + qs_off - 4);
        const __m128i bit = _mm_set1_epi8(16);
        lo = _mm_or_si128(lo, _mm_maskz_mov_epi8(__mmask16(qh & 0xffff), bit));
        hi = _mm_or_si128(hi, _mm_maskz_mov_epi8(__mmask16(qh >> 16), bit));
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o), lo);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 16), hi);
    }
  }
}

// One 16-column tile, every row group: acc[i][t] over blocks in order.
template <WKind K>
static void tile_cols(const Job& j, const Prep& p, int64_t n0, bool prefetch_next, uint8_t* abuf) {
  constexpr int bytes = K == kQ8_0 ? kQ8_0Bytes : K == kQ4_0 ? kQ4_0Bytes : K == kQ4_1 ? kQ4_1Bytes
                        : K == kQ5_0 ? kQ5_0Bytes : kQ5_1Bytes;
  constexpr bool has_min = K == kQ4_1 || K == kQ5_1;
  constexpr int offset = K == kQ4_0 ? 8 : K == kQ5_0 ? 16 : 0;  // folded into the integer dot
  const int64_t nb = j.k / 32;
  const uint8_t* w = j.w + n0 * j.wrow;
  if constexpr (K != kQ8_0) unpack_tile<K>(w, j.wrow, nb, abuf);
  // Scales of the 16 rows, all blocks, converted once and reused by every row group.
  float* dw = reinterpret_cast<float*>(abuf + nb * 512);
  float* mw = dw + nb * 16;
  const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(int32_t(j.wrow)));
  for (int64_t b = 0; b < nb; ++b) {  // d (low half) and m (high half) of 16 rows in one gather
    const __m512i dm = _mm512_i32gather_epi32(rows, w + b * bytes, 1);
    _mm512_storeu_ps(dw + b * 16, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm)));
    if constexpr (has_min) _mm512_storeu_ps(mw + b * 16, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dm, 16))));
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
        if constexpr (K == kQ8_0) {
          _tile_loadd(3, w + b * bytes + 2, long(j.wrow));
          _tile_dpbssd(1, 3, 5);
        } else {
          _tile_loadd(3, abuf + b * 512, 32);
          _tile_dpbusd(1, 3, 5);
        }
      } else {
        _tile_zero(0);
        _tile_loadd(4, bt, 64);
        if constexpr (K == kQ8_0) {
          _tile_loadd(2, w + b * bytes + 2, long(j.wrow));
          _tile_dpbssd(0, 2, 4);
        } else {
          _tile_loadd(2, abuf + b * 512, 32);
          _tile_dpbusd(0, 2, 4);
        }
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
      if (b + 1 < nb) store(b + 1);
      if (b + 2 < nb) issue(b + 2);
      if (g == 0 && prefetch_next) {  // the next 16 rows are read column-block-wise: fetch them early
        const size_t tile = 16 * j.wrow, lo = tile * size_t(b) / size_t(nb), hi = tile * size_t(b + 1) / size_t(nb);
        const char* next = reinterpret_cast<const char*>(w) + tile;
        for (size_t off = lo & ~size_t(63); off < hi; off += 64) _mm_prefetch(next + off, _MM_HINT_T0);
      }
      const __m512 dx = _mm512_loadu_ps(p.dx + b * p.tp + g * 16);
      const __m512i sx = _mm512_loadu_si512(p.sx + b * p.tp + g * 16);
      const __m512 dsx = _mm512_mul_ps(dx, _mm512_cvtepi32_ps(sx));
      const __m512i corr = _mm512_mullo_epi32(sx, _mm512_set1_epi32(offset));
      for (int i = 0; i < 16; ++i) {
        __m512i iv = _mm512_load_si512(cbuf[b & 1][i]);
        if constexpr (offset != 0) iv = _mm512_sub_epi32(iv, corr);
        __m512 pv = _mm512_mul_ps(_mm512_cvtepi32_ps(iv), _mm512_mul_ps(_mm512_set1_ps(dw[b * 16 + i]), dx));
        if constexpr (has_min) pv = _mm512_add_ps(pv, _mm512_mul_ps(_mm512_set1_ps(mw[b * 16 + i]), dsx));
        acc[i] = _mm512_add_ps(acc[i], pv);
      }
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
    thread_local std::vector<uint8_t> abuf;
    abuf.resize(size_t(j.k / 32) * (512 + 128) + 64);  // A tiles, then dw and mw
    uint8_t* a = reinterpret_cast<uint8_t*>((uintptr_t(abuf.data()) + 63) & ~uintptr_t(63));
    for (int64_t n = n0; n < full; n += 16) tile_cols<K>(j, *p, n, n + 16 < full, a);
    _tile_release();
  }
  if (full < n1) Fallback(j, full, n1);
}

// ---- Q4_0 / Q4_1 with activations as the A tile --------------------------------------------
// Here C = X·Wᵀ comes out as [activation rows][16 weight columns], so the float epilogue costs one
// 16-lane step per activation row and block instead of one per weight row: for the small T of a
// speculative verify (2..16) that is what bounds the speed. Weights go to B tiles in VNNI layout:
// B row r holds, for each of 16 columns, the 4 consecutive k values 4r..4r+3 of one block, which
// for nibble-packed blocks is dword r of the block's qs (low nibbles, r < 4) or its high nibbles.

// B tiles of 16 weight rows, every block: [nb][8 rows][16 columns x 4 bytes]; scales [nb][16].
template <WKind K>
static void unpack_b_q4(const uint8_t* w, size_t wrow, int64_t nb, uint8_t* bt, float* dw, float* mw) {
  constexpr int bytes = K == kQ4_0 ? kQ4_0Bytes : kQ4_1Bytes;
  constexpr int qs_off = K == kQ4_0 ? 2 : 4;
  const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(int32_t(wrow)));
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * bytes;
    uint8_t* o = bt + b * 512;
    for (int r = 0; r < 4; ++r) {
      const __m512i d = _mm512_i32gather_epi32(rows, blk + qs_off + 4 * r, 1);
      _mm512_store_si512(o + 64 * r, _mm512_and_si512(d, m4));
      _mm512_store_si512(o + 64 * (r + 4), _mm512_and_si512(_mm512_srli_epi16(d, 4), m4));
    }
    const __m512i dm = _mm512_i32gather_epi32(rows, blk, 1);  // d (low half) and m (high half)
    _mm512_store_ps(dw + b * 16, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm)));
    if constexpr (K == kQ4_1) _mm512_store_ps(mw + b * 16, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dm, 16))));
  }
}

// Epilogue of one block for the three column groups of a pass: acc[g][t] += the block's float
// term of row t; the row's scalars are loaded once and serve all 48 columns.
template <WKind K>
static inline void q4t_epilogue(const Job& j, int64_t g0, int tg, int64_t b, const int32_t (*c)[16][16],
                                float* const dw[3], float* const mw[3], __m512 (*acc)[16]) {
  constexpr bool has_min = K == kQ4_1;
  constexpr int32_t offset = K == kQ4_0 ? 8 : 0;  // Q4_0 stores q + 8: folded into the integer dot
  __m512 dwv[3], mwv[3];
  for (int g = 0; g < 3; ++g) {
    dwv[g] = _mm512_load_ps(dw[g] + b * 16);
    mwv[g] = has_min ? _mm512_load_ps(mw[g] + b * 16) : _mm512_setzero_ps();
  }
  for (int t = 0; t < tg; ++t) {
    const int64_t row = g0 + t;
    const float dx = j.act.d[row * j.act.d_per_row + b];
    const int32_t sx = j.act.s[row * j.act.s_per_row + b];
    const __m512 bdx = _mm512_set1_ps(dx), bdxs = _mm512_set1_ps(dx * float(sx));
    const __m512i boff = _mm512_set1_epi32(offset * sx);
    for (int g = 0; g < 3; ++g) {
      __m512i iv = _mm512_load_si512(c[g][t]);
      if constexpr (offset != 0) iv = _mm512_sub_epi32(iv, boff);
      __m512 pv = _mm512_mul_ps(_mm512_cvtepi32_ps(iv), _mm512_mul_ps(dwv[g], bdx));
      if constexpr (has_min) pv = _mm512_add_ps(pv, _mm512_mul_ps(mwv[g], bdxs));
      acc[g][t] = _mm512_add_ps(acc[g][t], pv);
    }
  }
}

// 48 columns (three 16-column groups) share each activation A tile; three independent C tiles keep
// the tile unit busy (one group alone waits on each product's store before its next block).
template <WKind K>
static void q4t_three_groups(const Job& j, int64_t g0, int tg, int64_t n, uint8_t* const bt[3], float* const dw[3],
                             float* const mw[3]) {
  const int64_t nb = j.k / 32;
  for (int g = 0; g < 3; ++g) unpack_b_q4<K>(j.w + (n + 16 * g) * j.wrow, j.wrow, nb, bt[g], dw[g], mw[g]);
  const int8_t* xq = j.act.qs + g0 * j.k;
  alignas(64) int32_t cbuf[2][3][16][16];
  __m512 acc[3][16];
  for (int g = 0; g < 3; ++g)
    for (int t = 0; t < tg; ++t) acc[g][t] = _mm512_setzero_ps();
  // Tile ids are immediates: C 0-2, A 3, B 4-6. Block b's products are stored while block b-1's,
  // stored one step earlier, go through the epilogue.
  for (int64_t b = 0; b < nb; ++b) {
    int32_t(*cb)[16][16] = cbuf[b & 1];
    _tile_loadd(3, xq + b * 32, long(j.k));
    _tile_zero(0);
    _tile_loadd(4, bt[0] + b * 512, 64);
    _tile_dpbsud(0, 3, 4);
    _tile_zero(1);
    _tile_loadd(5, bt[1] + b * 512, 64);
    _tile_dpbsud(1, 3, 5);
    _tile_zero(2);
    _tile_loadd(6, bt[2] + b * 512, 64);
    _tile_dpbsud(2, 3, 6);
    _tile_stored(0, cb[0], 64);
    _tile_stored(1, cb[1], 64);
    _tile_stored(2, cb[2], 64);
    if (b > 0) q4t_epilogue<K>(j, g0, tg, b - 1, cbuf[(b - 1) & 1], dw, mw, acc);
  }
  q4t_epilogue<K>(j, g0, tg, nb - 1, cbuf[(nb - 1) & 1], dw, mw, acc);
  for (int g = 0; g < 3; ++g)
    for (int t = 0; t < tg; ++t) _mm512_storeu_ps(j.y + (g0 + t) * j.n + n + 16 * g, acc[g][t]);
}

// T <= kQ4SmallT: 48-column passes on tiles; columns short of a whole pass (not met by the default
// model's shapes) take the VNNI path, which gives the same bits.
template <WKind K>
void cols_amx_q4t(const Job& j, int64_t n0, int64_t n1) {
  if (j.t > kQ4SmallT) return cols_amx<K, &cols_q4x4<K>>(j, n0, n1);
  const int64_t full = j.t >= 2 ? n0 + (n1 - n0) / 48 * 48 : n0;
  if (full > n0) {
    const int64_t nb = j.k / 32;
    const size_t per_group = size_t(nb) * (512 + 128);  // B tiles, then dw and mw
    thread_local std::vector<uint8_t> buf;
    buf.resize(3 * per_group + 64);
    uint8_t* base = reinterpret_cast<uint8_t*>((uintptr_t(buf.data()) + 63) & ~uintptr_t(63));
    uint8_t* bt[3];
    float *dw[3], *mw[3];
    for (int g = 0; g < 3; ++g) {
      bt[g] = base + g * per_group;
      dw[g] = reinterpret_cast<float*>(bt[g] + nb * 512);
      mw[g] = dw[g] + nb * 16;
    }
    for (int64_t g0 = 0; g0 < j.t; g0 += 16) {
      const int tg = int(std::min<int64_t>(16, j.t - g0));
      TileConfig cfg;
      for (int c : {0, 1, 2}) cfg.rows[c] = uint8_t(tg), cfg.colsb[c] = 64;  // C: rows x 16 columns of int32
      cfg.rows[3] = uint8_t(tg), cfg.colsb[3] = 32;                          // A: rows x one block of int8
      for (int bb : {4, 5, 6}) cfg.rows[bb] = 8, cfg.colsb[bb] = 64;         // B: 8 k-quads x 16 columns x 4 bytes
      _tile_loadconfig(&cfg);
      for (int64_t n = n0; n < full; n += 48) q4t_three_groups<K>(j, g0, tg, n, bt, dw, mw);
      _tile_release();
    }
  }
  if (full < n1) cols_q4x4<K>(j, full, n1);
}

}  // namespace amx_impl
}  // namespace eyas::cpu::quant
#pragma GCC pop_options

namespace eyas::cpu::quant {
const Table* table_amx() {
  static const Table tb = [] {
    using namespace amx_impl;
    Table t = *table_avx512();
    t.isa = Isa::Amx;
    t.cols[kQ8_0] = &cols_amx<kQ8_0, &cols_q8_0>;
    t.cols[kQ4_0] = &cols_amx_q4t<kQ4_0>;
    t.cols[kQ4_1] = &cols_amx_q4t<kQ4_1>;
    t.cols[kQ5_0] = &cols_amx<kQ5_0, &cols_q4x4<kQ5_0>>;
    t.cols[kQ5_1] = &cols_amx<kQ5_1, &cols_q4x4<kQ5_1>>;
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
