// Tree attention. For each (query, head): collect the visible key slots (prefix in slot order, then
// the visible new slots in slot order), then run one fixed reduction over that list:
//   1. s[p] = fold16(lanes of q * k[p]) * scale   (16 lanes over D, folded 8/4/2/1)
//   2. m = max s; e[p] = exp(s[p] - m); l = fold16(e summed into lane p % 16)
//   3. o = (sum over even p of e[p] v[p] + sum over odd p of e[p] v[p]) / l, each sum in p order
// Every step depends only on the position p in the visible list, so a tree query gives the same bits
// as a T=1 decode over the same keys laid out contiguously, at any T and thread count. An F16 cache
// is read through an exact conversion to float, so the reduction is the same.
#include "cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/attention_blocks.h"
#include "cpu/attention_split.h"
#include "cpu/quant/formats.h"
#include "cpu/softmax_exp.h"

namespace eyas::cpu {
namespace {

using namespace attn;

// A cache element as float: F32 as is, F16 (stored as uint16_t) exactly converted.
inline float kv_value(float x) { return x; }
inline float kv_value(uint16_t h) { return quant::h2f(h); }

// kh, vh: one KV head [capacity, D]; s: scratch [n]; out: [D].
template <typename KV>
void attend_scalar(const float* qr, const KV* kh, const KV* vh, const int32_t* slots, int n, int D, float scale,
                   float* s, float* out) {
  if (n == 0) {
    std::fill(out, out + D, 0.0f);
    return;
  }
  for (int p = 0; p < n; ++p) {
    const KV* kr = kh + int64_t(slots[p]) * D;
    float lanes[16] = {0};
    for (int c = 0; c < D; c += 16)
      for (int l = 0; l < 16; ++l) lanes[l] = std::fma(qr[c + l], kv_value(kr[c + l]), lanes[l]);
    s[p] = fold16_scalar(lanes) * scale;
  }
  float m = -std::numeric_limits<float>::infinity();
  for (int p = 0; p < n; ++p)
    if (s[p] > m) m = s[p];
  float lanes[16] = {0};
  for (int p = 0; p < n; ++p) {
    s[p] = exp_scalar(s[p] - m);
    lanes[p & 15] += s[p];
  }
  const float l = fold16_scalar(lanes);
  float acc[2][kMaxHeadDim] = {};
  for (int p = 0; p < n; ++p) {
    const KV* vr = vh + int64_t(slots[p]) * D;
    float* ac = acc[p & 1];
    for (int d = 0; d < D; ++d) ac[d] = std::fma(s[p], kv_value(vr[d]), ac[d]);
  }
  for (int d = 0; d < D; ++d) out[d] = (acc[0][d] + acc[1][d]) / l;
}

#if EYAS_X86
// Per-thread scratch of one tile: a slot list per query, scores and accumulators per item.
struct TileScratch {
  std::vector<int32_t> slots;  // [queries][stride]
  std::vector<float> scores;   // [items][stride]
  std::vector<float> acc;      // [items][2][D]
  std::vector<float> l;        // [items] softmax denominators
  std::vector<const float*> q_rows;        // [items] query row of each item
  std::vector<float*> s_rows, a0_rows, a1_rows;  // [items] its scores and its two accumulators
};

// Keys per block: a block's K rows fit in L1.
inline int tile_block(int D) { return std::max(16, (32768 / (4 * D)) & ~15); }

// Sizes the tile's scratch and fills each query's visible slot list; n[t]: visible keys of query
// i0 + t; ident[t]: positions [0, ident) of its list are slots 0, 1, ... (the committed prefix, and
// in causal calls and along chains every key), addressed without lookups. Returns the largest n.
int plan_tile(const AttentionArgs& a, const uint8_t* mask, int i0, int i1, int items, TileScratch& sc, int* n,
              int* ident) {
  const int nq = i1 - i0;  // at most 64: the callers' arrays
  const int64_t stride = row_stride(a);
  if (sc.slots.size() < size_t(nq) * stride) sc.slots.resize(size_t(nq) * stride);
  if (sc.scores.size() < size_t(items) * stride) sc.scores.resize(size_t(items) * stride);
  sc.acc.assign(size_t(items) * 2 * a.head_dim, 0.0f);
  sc.l.resize(items);
  int max_n = 0;
  for (int t = 0; t < nq; ++t) {
    int32_t* sl = sc.slots.data() + int64_t(t) * stride;
    for (int s = 0; s < a.prefix_len; ++s) sl[s] = s;
    n[t] = collect_new_slots(a, mask, i0 + t, sl);
    ident[t] = identity_run(sl, a.prefix_len, n[t]);
    max_n = std::max(max_n, n[t]);
  }
  return max_n;
}

// The tile's item tables (query row, score row, accumulators of items (query i0 + it / group, head
// h0 + it % group)) and its shared positions: [0, shared) are slots 0, 1, ... for every query (the
// committed prefix at least), so each of their K/V rows is read once for a group of items. Even, so the
// even/odd V accumulators carry on into each item's own positions.
int plan_shared(const AttentionArgs& a, const float* q, int i0, int i1, int h0, int group, int max_n, const int* ident,
                TileScratch& sc) {
  const int items = (i1 - i0) * group, D = a.head_dim;
  const int64_t stride = row_stride(a);
  int shared = max_n;
  for (int t = 0; t < i1 - i0; ++t) shared = std::min(shared, ident[t]);
  sc.q_rows.resize(items), sc.s_rows.resize(items), sc.a0_rows.resize(items), sc.a1_rows.resize(items);
  for (int it = 0; it < items; ++it) {
    sc.q_rows[it] = q + (int64_t(i0 + it / group) * a.n_heads + h0 + it % group) * D;
    sc.s_rows[it] = sc.scores.data() + int64_t(it) * stride;
    sc.a0_rows[it] = sc.acc.data() + int64_t(it) * 2 * D;
    sc.a1_rows[it] = sc.a0_rows[it] + D;
  }
  return shared & ~1;
}

// One tile = queries [i0, i1) x query heads [h0, h1) of kv head g. Each item (query, head) runs
// exactly attend_scalar's operations; the tile only interleaves items block by block so a block of
// K/V rows is read from memory once for all of them instead of once per item.
// kt: the kv head's K rows as transposed 16-key blocks (attention()'s conversion pass), or null.
template <typename KV>
__attribute__((target("avx512f"))) void attend_tile_avx512(const AttentionArgs& a, const uint8_t* mask,
                                                           const float* q, const KV* kh, const KV* vh, float* o,
                                                           int i0, int i1, int h0, int h1, TileScratch& sc,
                                                           const float* kt) {
  const int D = a.head_dim, group = h1 - h0, items = (i1 - i0) * group;
  const int64_t stride = row_stride(a);
  const int block = tile_block(D);
  int n[64], ident[64];
  const int max_n = plan_tile(a, mask, i0, i1, items, sc, n, ident);
  const int shared = plan_shared(a, q, i0, i1, h0, group, max_n, ident, sc);
  // 1. scores
  for (int b0 = 0; b0 < max_n; b0 += block) {
    const int s1 = std::min(b0 + block, shared);
    if (s1 > b0)
      for_item_groups(items, [&](auto g, int j0) {
        constexpr int G = decltype(g)::value;
        if (kt)
          scores_kt_range<G>(sc.q_rows.data() + j0, kt, b0, s1, D, a.scale, sc.s_rows.data() + j0);
        else
          scores_shared_range<G>(sc.q_rows.data() + j0, kh, b0, s1, D, a.scale, sc.s_rows.data() + j0);
      });
    for (int it = 0; it < items; ++it) {
      const int t = it / group;
      item_scores(sc.q_rows[it], kh, sc.slots.data() + int64_t(t) * stride, ident[t], std::max(b0, shared),
                  std::min(b0 + block, n[t]), D, a.scale, sc.s_rows[it]);
    }
  }
  // 2. max, exp, sum per item
  float* l = sc.l.data();
  for (int it = 0; it < items; ++it) l[it] = exp_and_sum(sc.s_rows[it], n[it / group]);
  // 3. weighted V sums, then normalize
  for (int b0 = 0; b0 < max_n; b0 += block) {
    const int s1 = std::min(b0 + block, shared);
    if (s1 > b0)
      for_item_groups(items, [&](auto g, int j0) {
        pv_shared_range<decltype(g)::value>(vh, sc.s_rows.data() + j0, b0, s1, D, sc.a0_rows.data() + j0,
                                            sc.a1_rows.data() + j0);
      });
    for (int it = 0; it < items; ++it) {
      const int t = it / group, p0 = std::max(b0, shared), b1 = std::min(b0 + block, n[t]);
      if (p0 >= b1) continue;
      pv_range(vh, sc.slots.data() + int64_t(t) * stride, sc.s_rows[it], p0, b1, ident[t], D, sc.a0_rows[it],
               sc.a1_rows[it]);
    }
  }
  for (int it = 0; it < items; ++it) {
    float* out = o + (int64_t(i0 + it / group) * a.n_heads + h0 + it % group) * D;
    const float* acc = sc.acc.data() + int64_t(it) * 2 * D;
    if (n[it / group] == 0) {
      std::fill(out, out + D, 0.0f);
      continue;
    }
    const __m512 lv = _mm512_set1_ps(l[it]);
    for (int d = 0; d < D; d += 16)
      _mm512_storeu_ps(out + d, _mm512_div_ps(_mm512_add_ps(_mm512_loadu_ps(acc + d), _mm512_loadu_ps(acc + D + d)), lv));
  }
}

// ---- AVX2 + FMA: the same per-item operations as attend_scalar, 8 lanes at a time ----------------
__attribute__((target("avx2,f16c"))) inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
__attribute__((target("avx2,f16c"))) inline __m256 load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Scores of 4 keys: each key's 16 lanes (two vectors) accumulate q * k over D, then fold16.
template <typename KV>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline void scores4_avx2(const float* qr, const KV* const* kr,
                                                                                 int D, float* out) {
  __m256 lo[4], hi[4];
  for (int k = 0; k < 4; ++k) lo[k] = hi[k] = _mm256_setzero_ps();
  for (int c = 0; c < D; c += 16) {
    const __m256 q0 = _mm256_loadu_ps(qr + c), q1 = _mm256_loadu_ps(qr + c + 8);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      lo[k] = _mm256_fmadd_ps(q0, load8(kr[k] + c), lo[k]);
      hi[k] = _mm256_fmadd_ps(q1, load8(kr[k] + c + 8), hi[k]);
    }
  }
  for (int k = 0; k < 4; ++k) out[k] = fold16_avx2(lo[k], hi[k]);
}

// acc0/acc1 (D floats each, in memory) += e[p] * v_row(p)[d0 .. d0 + 8 NV) for p in [p0, p1): even p
// into acc0, odd into acc1, in p order (p0 even, so block after block keeps the sequence).
template <int NV, typename ValueRow>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline void pv_block_avx2(ValueRow v_row, const float* e, int p0,
                                                                                  int p1, int d0, float* acc0, float* acc1) {
  __m256 a0[NV], a1[NV];
  for (int g = 0; g < NV; ++g) a0[g] = _mm256_loadu_ps(acc0 + d0 + 8 * g), a1[g] = _mm256_loadu_ps(acc1 + d0 + 8 * g);
  int p = p0;
  for (; p + 2 <= p1; p += 2) {
    const auto* v0 = v_row(p) + d0;
    const auto* v1 = v_row(p + 1) + d0;
    const __m256 e0 = _mm256_set1_ps(e[p]), e1 = _mm256_set1_ps(e[p + 1]);
#pragma GCC unroll 4
    for (int g = 0; g < NV; ++g) {
      a0[g] = _mm256_fmadd_ps(e0, load8(v0 + 8 * g), a0[g]);
      a1[g] = _mm256_fmadd_ps(e1, load8(v1 + 8 * g), a1[g]);
    }
  }
  if (p < p1) {
    const auto* v0 = v_row(p) + d0;
    const __m256 e0 = _mm256_set1_ps(e[p]);
    for (int g = 0; g < NV; ++g) a0[g] = _mm256_fmadd_ps(e0, load8(v0 + 8 * g), a0[g]);
  }
  for (int g = 0; g < NV; ++g) _mm256_storeu_ps(acc0 + d0 + 8 * g, a0[g]), _mm256_storeu_ps(acc1 + d0 + 8 * g, a1[g]);
}

// Scores of G items (query rows qr[j]) x KB consecutive key rows kb[k * D] (G * KB <= 4; keys past nk
// repeat row 0): out[j * KB + k] = item j's score of key k, unscaled. Each key row is loaded (and, from
// an F16 cache, converted) once for all G items; every (item, key) runs scores4_avx2's operations.
template <int G, int KB, typename KV>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline void scores_shared_avx2(const float* const* qr,
                                                                                      const KV* kb, int nk, int D,
                                                                                      float* out) {
  static_assert(G * KB <= 4);
  __m256 lo[G * KB], hi[G * KB];
  for (int i = 0; i < G * KB; ++i) lo[i] = hi[i] = _mm256_setzero_ps();
  for (int c = 0; c < D; c += 16) {
#pragma GCC unroll 4
    for (int k = 0; k < KB; ++k) {
      const KV* kr = kb + int64_t(k < nk ? k : 0) * D + c;
      const __m256 k0 = load8(kr), k1 = load8(kr + 8);
#pragma GCC unroll 4
      for (int j = 0; j < G; ++j) {
        lo[j * KB + k] = _mm256_fmadd_ps(_mm256_loadu_ps(qr[j] + c), k0, lo[j * KB + k]);
        hi[j * KB + k] = _mm256_fmadd_ps(_mm256_loadu_ps(qr[j] + c + 8), k1, hi[j * KB + k]);
      }
    }
  }
  for (int i = 0; i < G * KB; ++i) out[i] = fold16_avx2(lo[i], hi[i]);
}

// Shared rows [p0, p1) (consecutive slots) of G items: s[j][p] = score * scale. 4 (item, key) pairs
// per pass: 8 accumulators, enough to hide the FMA latency within AVX2's 16 registers.
template <int G, typename KV>
__attribute__((target("avx2,fma,f16c"))) void scores_shared_range_avx2(const float* const* qr, const KV* kh, int p0,
                                                                        int p1, int D, float scale, float* const* s) {
  constexpr int KB = G == 1 ? 4 : G == 2 ? 2 : 1;
  for (int p = p0; p < p1; p += KB) {
    const int nk = std::min(KB, p1 - p);
    float sv[G * KB];
    scores_shared_avx2<G, KB>(qr, kh + int64_t(p) * D, nk, D, sv);
    for (int j = 0; j < G; ++j)
      for (int k = 0; k < nk; ++k) s[j][p + k] = sv[j * KB + k] * scale;
  }
}

// acc0[j]/acc1[j] (in memory, D floats each) += e[j][p] * v[p][d0 .. d0 + 8 NV) for p in [p0, p1) of
// consecutive rows v[p] = vh + p D, for G items at once (each V row loaded once for all): even p into
// acc0, odd into acc1, in p order, as pv_block_avx2 does per item. p0 is even.
template <int G, int NV, typename KV>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline void pv_shared_block_avx2(
    const KV* vh, const float* const* e, int p0, int p1, int D, int d0, float* const* acc0, float* const* acc1) {
  __m256 a0[G][NV], a1[G][NV];
  for (int j = 0; j < G; ++j)
    for (int g = 0; g < NV; ++g)
      a0[j][g] = _mm256_loadu_ps(acc0[j] + d0 + 8 * g), a1[j][g] = _mm256_loadu_ps(acc1[j] + d0 + 8 * g);
  int p = p0;
  for (; p + 2 <= p1; p += 2) {
    const KV* v0 = vh + int64_t(p) * D + d0;
    const KV* v1 = v0 + D;
    __m256 x0[NV], x1[NV];
#pragma GCC unroll 4
    for (int g = 0; g < NV; ++g) x0[g] = load8(v0 + 8 * g), x1[g] = load8(v1 + 8 * g);
#pragma GCC unroll 4
    for (int j = 0; j < G; ++j) {
      const __m256 e0 = _mm256_set1_ps(e[j][p]), e1 = _mm256_set1_ps(e[j][p + 1]);
#pragma GCC unroll 4
      for (int g = 0; g < NV; ++g) {
        a0[j][g] = _mm256_fmadd_ps(e0, x0[g], a0[j][g]);
        a1[j][g] = _mm256_fmadd_ps(e1, x1[g], a1[j][g]);
      }
    }
  }
  if (p < p1) {
    const KV* v0 = vh + int64_t(p) * D + d0;
    for (int j = 0; j < G; ++j) {
      const __m256 e0 = _mm256_set1_ps(e[j][p]);
      for (int g = 0; g < NV; ++g) a0[j][g] = _mm256_fmadd_ps(e0, load8(v0 + 8 * g), a0[j][g]);
    }
  }
  for (int j = 0; j < G; ++j)
    for (int g = 0; g < NV; ++g)
      _mm256_storeu_ps(acc0[j] + d0 + 8 * g, a0[j][g]), _mm256_storeu_ps(acc1[j] + d0 + 8 * g, a1[j][g]);
}

// pv_shared_block_avx2 over all of D (a multiple of 8): G x NV <= 4 vectors per pass, so the 2 G NV
// accumulators, the V row's NV vectors of 2 positions and 2 weights fit in 16 registers.
template <int G, typename KV>
__attribute__((target("avx2,fma,f16c"))) void pv_shared_range_avx2(const KV* vh, const float* const* e, int p0, int p1,
                                                                    int D, float* const* acc0, float* const* acc1) {
  constexpr int NV = G == 1 ? 4 : G == 2 ? 2 : 1;
  int d0 = 0;
  for (; d0 + 8 * NV <= D; d0 += 8 * NV) pv_shared_block_avx2<G, NV>(vh, e, p0, p1, D, d0, acc0, acc1);
  for (; d0 < D; d0 += 8) pv_shared_block_avx2<G, 1>(vh, e, p0, p1, D, d0, acc0, acc1);
}

// One tile (queries [i0, i1) x query heads [h0, h1) of one kv head), as attend_tile_avx512: each item
// runs attend_scalar's operations; items interleave block by block so a block of K/V rows is read
// from memory once for all of them.
template <typename KV>
__attribute__((target("avx2,fma,f16c"))) void attend_tile_avx2(const AttentionArgs& a, const uint8_t* mask,
                                                               const float* q, const KV* kh, const KV* vh, float* o,
                                                               int i0, int i1, int h0, int h1, TileScratch& sc) {
  const int D = a.head_dim, group = h1 - h0, items = (i1 - i0) * group;
  const int64_t stride = row_stride(a);
  const int block = tile_block(D);
  int n[64], ident[64];
  const int max_n = plan_tile(a, mask, i0, i1, items, sc, n, ident);
  auto row = [&](const KV* base, int t, int p) {
    return base + int64_t(p < ident[t] ? p : sc.slots[int64_t(t) * stride + p]) * D;
  };
  const int shared = plan_shared(a, q, i0, i1, h0, group, max_n, ident, sc);
  // 1. scores
  for (int b0 = 0; b0 < max_n; b0 += block) {
    const int s1 = std::min(b0 + block, shared);
    if (s1 > b0)
      for_item_groups(items, [&](auto g, int j0) {
        scores_shared_range_avx2<decltype(g)::value>(sc.q_rows.data() + j0, kh, b0, s1, D, a.scale,
                                                     sc.s_rows.data() + j0);
      });
    for (int it = 0; it < items; ++it) {
      const int t = it / group, b1 = std::min(b0 + block, n[t]);
      float* s = sc.s_rows[it];
      for (int p0 = std::max(b0, shared); p0 < b1; p0 += 4) {
        const KV* kp[4];
        for (int k = 0; k < 4; ++k) kp[k] = row(kh, t, p0 + k < b1 ? p0 + k : p0);
        float four[4];
        scores4_avx2(sc.q_rows[it], kp, D, four);
        for (int k = 0; k < 4 && p0 + k < b1; ++k) s[p0 + k] = four[k] * a.scale;
      }
    }
  }
  // 2. max, exp, sum per item (sum lanes: position p into lane p % 16)
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (int it = 0; it < items; ++it) {
    const int nt = n[it / group];
    float* s = sc.scores.data() + int64_t(it) * stride;
    __m256 mv = ninf;
    for (int p0 = 0; p0 < nt; p0 += 8) {
      const __m256i k = tail_mask8(nt - p0);
      mv = _mm256_max_ps(mv, _mm256_blendv_ps(ninf, _mm256_maskload_ps(s + p0, k), _mm256_castsi256_ps(k)));
    }
    const __m256 mb = _mm256_set1_ps(hmax8_avx2(mv));
    __m256 lanes[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int p0 = 0; p0 < nt; p0 += 8) {
      const __m256i k = tail_mask8(nt - p0);
      const __m256 e = exp_avx2(_mm256_sub_ps(_mm256_maskload_ps(s + p0, k), mb));
      _mm256_maskstore_ps(s + p0, k, e);
      lanes[(p0 >> 3) & 1] = _mm256_add_ps(lanes[(p0 >> 3) & 1], _mm256_and_ps(e, _mm256_castsi256_ps(k)));
    }
    sc.l[it] = fold16_avx2(lanes[0], lanes[1]);
  }
  // 3. weighted V sums (even positions into acc0, odd into acc1, in position order), then normalize
  for (int b0 = 0; b0 < max_n; b0 += block) {
    const int s1 = std::min(b0 + block, shared);
    if (s1 > b0)
      for_item_groups(items, [&](auto g, int j0) {
        pv_shared_range_avx2<decltype(g)::value>(vh, sc.s_rows.data() + j0, b0, s1, D, sc.a0_rows.data() + j0,
                                                 sc.a1_rows.data() + j0);
      });
    for (int it = 0; it < items; ++it) {
      const int t = it / group, p0 = std::max(b0, shared), b1 = std::min(b0 + block, n[t]);
      if (p0 >= b1) continue;
      const float* e = sc.s_rows[it];
      float* acc = sc.a0_rows[it];
      auto v_row = [&](int p) { return row(vh, t, p); };
      int d0 = 0;
      for (; d0 + 32 <= D; d0 += 32) pv_block_avx2<4>(v_row, e, p0, b1, d0, acc, acc + D);
      if (D - d0 == 16) pv_block_avx2<2>(v_row, e, p0, b1, d0, acc, acc + D);
    }
  }
  for (int it = 0; it < items; ++it) {
    float* out = o + (int64_t(i0 + it / group) * a.n_heads + h0 + it % group) * D;
    const float* acc = sc.acc.data() + int64_t(it) * 2 * D;
    if (n[it / group] == 0) {
      std::fill(out, out + D, 0.0f);
      continue;
    }
    const __m256 lv = _mm256_set1_ps(sc.l[it]);
    for (int d = 0; d < D; d += 8)
      _mm256_storeu_ps(out + d, _mm256_div_ps(_mm256_add_ps(_mm256_loadu_ps(acc + d), _mm256_loadu_ps(acc + D + d)), lv));
  }
}
#endif

}  // namespace

#if EYAS_X86
// The SIMD path's work units of one call: (kv head, tile of queries, part of the kv head's query
// heads), each about 16 (query, head) items. `spread`: units other calls add to the same dispatch;
// heads are split into parts only until every thread has work.
struct TileUnits {
  int per_tile, tiles, parts;
  int64_t count;
};
TileUnits tile_units(const AttentionArgs& a, int nth, int64_t spread) {
  const int group = a.n_heads / a.n_kv_heads;
  const int per_tile = std::max(1, std::min(64, 16 / group));
  const int tiles = (a.n_q + per_tile - 1) / per_tile;
  const int64_t base = int64_t(tiles) * a.n_kv_heads;
  const int parts = int(std::min<int64_t>(group, std::max<int64_t>(1, (2 * nth - spread + base - 1) / base)));
  return {per_tile, tiles, parts, base * parts};
}

// Keys x heads that unit u of a call reads: a causal query sees the prefix and the new rows up to its own, so
// a prefill chunk's last tiles read up to twice an average tile's keys (masked rows are priced as causal).
int64_t unit_cost(const AttentionArgs& a, const TileUnits& tu, int64_t u) {
  const int group = a.n_heads / a.n_kv_heads;
  const int tile = int(u / tu.parts % tu.tiles), part = int(u % tu.parts);
  const int i0 = tile * tu.per_tile, i1 = std::min(a.n_q, i0 + tu.per_tile);
  const int heads = (part + 1) * group / tu.parts - part * group / tu.parts;
  return (int64_t(a.prefix_len) + std::min(i1, a.n_new)) * (i1 - i0) * heads;
}

// First unit of each of nth threads' shares and the end: shares of about equal cost (each unit goes to the
// share its cost midpoint falls in), where an even split by count left the threads with a causal chunk's
// early tiles idle (135M pp512 on 16 threads). cost(u) > 0. Which thread runs a unit never changes its bits.
template <typename Cost>
std::vector<int64_t> balanced_bounds(int64_t count, int nth, const Cost& cost) {
  std::vector<int64_t> mid2(static_cast<size_t>(count));  // twice each unit's cost midpoint
  int64_t total = 0;
  for (int64_t u = 0; u < count; ++u) {
    const int64_t c = cost(u);
    mid2[size_t(u)] = 2 * total + c;
    total += c;
  }
  std::vector<int64_t> bounds(size_t(nth) + 1, count);
  for (int t = 0; t < nth; ++t)
    bounds[size_t(t)] = std::lower_bound(mid2.begin(), mid2.end(), 2 * total * t / nth) - mid2.begin();
  return bounds;
}

// Unit u (< tile_units(...).count) of one call.
// kt: every kv head's transposed K blocks ([kv head][block][D][16], kt_head floats a head), or null.
template <typename KV>
void run_unit(const AttentionArgs& a, const float* q, const KV* k, const KV* v, const uint8_t* mask, float* o,
              const TileUnits& tu, int64_t u, bool simd512, TileScratch& scratch, const float* kt = nullptr,
              int64_t kt_head = 0) {
  const int D = a.head_dim, group = a.n_heads / a.n_kv_heads;
  const int g = int(u / (tu.tiles * tu.parts)), tile = int(u / tu.parts % tu.tiles), part = int(u % tu.parts);
  const int i0 = tile * tu.per_tile, i1 = std::min(a.n_q, i0 + tu.per_tile);
  const int h0 = g * group + part * group / tu.parts, h1 = g * group + (part + 1) * group / tu.parts;
  const int64_t kv_off = int64_t(g) * a.capacity * D;
  if (simd512)
    attend_tile_avx512(a, mask, q, k + kv_off, v + kv_off, o, i0, i1, h0, h1, scratch, kt ? kt + g * kt_head : nullptr);
  else
    attend_tile_avx2(a, mask, q, k + kv_off, v + kv_off, o, i0, i1, h0, h1, scratch);
}

// Short decodes finish faster than the pool wakes up.
constexpr int64_t kMinMacsForThreads = 65536;
int64_t attention_macs(const AttentionArgs& a) { return int64_t(a.n_q) * a.n_heads * (a.prefix_len + a.n_new) * a.head_dim; }
#endif

template <typename KV>
static void attention_kv(const AttentionArgs& a, const float* q, const KV* k, const KV* v, const uint8_t* mask, float* o,
                  ThreadPool& pool, const float* kt = nullptr, int64_t kt_head = 0) {
  const int D = a.head_dim, group = a.n_heads / a.n_kv_heads;
#if EYAS_X86
  const bool simd512 = use_avx512();
  if (simd512 || use_avx2()) {
    const TileUnits tu = tile_units(a, pool.num_threads(), 0);
    auto units = [&](int64_t u0, int64_t u1) {
      thread_local TileScratch scratch;
      for (int64_t u = u0; u < u1; ++u) run_unit(a, q, k, v, mask, o, tu, u, simd512, scratch, kt, kt_head);
    };
    if (attention_macs(a) < kMinMacsForThreads) return units(0, tu.count);  // a decode: no shares to price
    const std::vector<int64_t> bounds =
        balanced_bounds(tu.count, pool.num_threads(), [&](int64_t u) { return unit_cost(a, tu, u); });
    pool.run([&](int tid, int) { units(bounds[tid], bounds[tid + 1]); });
    return;
  }
#endif
  const int max_keys = a.prefix_len + a.n_new;
  pool.run([&](int tid, int nth) {
    int64_t w0, w1;
    ThreadPool::split(int64_t(a.n_q) * a.n_heads, tid, nth, 1, &w0, &w1);
    if (w0 >= w1) return;
    thread_local std::vector<int32_t> slots;
    thread_local std::vector<float> scores;
    if (int(slots.size()) < max_keys) slots.resize(max_keys), scores.resize(max_keys + 16);
    for (int s = 0; s < a.prefix_len; ++s) slots[s] = s;
    int cur_q = -1, n = 0;
    for (int64_t w = w0; w < w1; ++w) {
      const int i = int(w / a.n_heads), h = int(w % a.n_heads);
      if (i != cur_q) n = collect_new_slots(a, mask, i, slots.data()), cur_q = i;
      const int64_t kv_off = int64_t(h / group) * a.capacity * D;
      attend_scalar(q + (int64_t(i) * a.n_heads + h) * D, k + kv_off, v + kv_off, slots.data(), n, D, a.scale,
                    scores.data(), o + (int64_t(i) * a.n_heads + h) * D);
    }
  });
}

#if EYAS_X86
// Per thread, K, V and the transposed K converted for one call take at most 3 x 16 MB (longer contexts read the F16 rows
// per query, as decode does).
constexpr size_t kMaxConvertedValues = size_t(4) << 20;
// Below this many queries the conversion pass and its barrier cost more than they save
// (bench_attention, SmolLM2 layer, 128 keys: T = 8 50-53 -> 52-62 us; T = 32 196-208 -> 166-198 us).
constexpr int kMinQueriesToConvert = 16;

// Rows [r0, r1) of the first `rows` rows of every kv head of an F16 cache [heads, capacity, D], as
// float [heads, rows, D] (exact).
__attribute__((target("avx512f"))) static void rows_to_f32(const uint16_t* h, int capacity, int rows, int D, int64_t r0,
                                                          int64_t r1, float* out) {
  for (int64_t r = r0; r < r1; ++r) {
    const uint16_t* src = h + (r / rows * capacity + r % rows) * int64_t(D);
    float* dst = out + r * D;
    for (int d = 0; d < D; d += 16) _mm512_storeu_ps(dst + d, load16(src + d));
  }
}

// Blocks [b0, b1) of every kv head's first `rows` K rows (F16 cache [heads, capacity, D]), each 16 rows
// transposed to float [D][16] (rows past `rows` zero): out[(head * blocks + b) * 16 D + d * 16 + k]. The
// tile path's shared-prefix scores read them with the keys in lanes (scores_kt16).
__attribute__((target("avx512f"))) static void k_blocks_transposed(const uint16_t* h, int capacity, int rows, int D,
                                                                  int64_t b0, int64_t b1, float* out) {
  const int64_t blocks = (rows + 15) / 16;
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t head = b / blocks, r0 = b % blocks * 16;
    transpose_k_block(h + (head * capacity + r0) * int64_t(D), int(std::min<int64_t>(16, rows - r0)), D,
                      out + b * 16 * int64_t(D));
  }
}
#endif

void attention(const AttentionArgs& a, const float* q, const void* k, const void* v, bool kv_f16, const uint8_t* mask,
               float* o, ThreadPool& pool) {
  if (attention_split(a, q, k, v, kv_f16, mask, o, pool)) return;
  if (!kv_f16) return attention_kv(a, q, static_cast<const float*>(k), static_cast<const float*>(v), mask, o, pool);
  const auto* kh = static_cast<const uint16_t*>(k);
  const auto* vh = static_cast<const uint16_t*>(v);
#if EYAS_X86
  // Several queries read every key row once per query head: converting the visible rows to float once
  // beats converting them per (query, head) once there are many queries. Exact, so same bits.
  const int rows = a.prefix_len + a.n_new;
  const size_t n = size_t(a.n_kv_heads) * rows * a.head_dim;
  if (use_avx512() && a.n_q >= kMinQueriesToConvert && rows > 0 && n <= kMaxConvertedValues) {
    const int64_t blocks = (rows + 15) / 16, kt_head = blocks * 16 * a.head_dim;
    thread_local std::vector<float> k32, v32, kt32;
    if (k32.size() < n) k32.resize(n), v32.resize(n);
    if (kt32.size() < size_t(a.n_kv_heads * kt_head)) kt32.resize(size_t(a.n_kv_heads * kt_head));
    float *kf = k32.data(), *vf = v32.data(), *kt = kt32.data();  // thread_local: the workers must get the pointers
    pool.run([&](int tid, int nth) {                                // split by rows across threads
      int64_t r0, r1, b0, b1;
      ThreadPool::split(int64_t(a.n_kv_heads) * rows, tid, nth, 16, &r0, &r1);
      rows_to_f32(kh, a.capacity, rows, a.head_dim, r0, r1, kf);
      rows_to_f32(vh, a.capacity, rows, a.head_dim, r0, r1, vf);
      ThreadPool::split(a.n_kv_heads * blocks, tid, nth, 1, &b0, &b1);
      k_blocks_transposed(kh, a.capacity, rows, a.head_dim, b0, b1, kt);
    });
    AttentionArgs a32 = a;
    a32.capacity = rows;
    return attention_kv(a32, q, kf, vf, mask, o, pool, kt, kt_head);
  }
#endif
  attention_kv(a, q, kh, vh, mask, o, pool);
}

void attention_many(const std::vector<AttentionCall>& calls, ThreadPool& pool) {
#if EYAS_X86
  const bool simd512 = use_avx512();
  if (simd512 || use_avx2()) {
    // One unit space over every call that takes the tile path as it is; the rest run on their own.
    std::vector<const AttentionCall*> tiled;
    int64_t all_base = 0, macs = 0;
    for (const AttentionCall& c : calls) {
      const bool converts = c.kv_f16 && simd512 && c.a.n_q >= kMinQueriesToConvert;
      if (converts || c.a.n_q == 0) {
        if (c.a.n_q) attention(c.a, c.q, c.k, c.v, c.kv_f16, c.mask, c.o, pool);
        continue;
      }
      tiled.push_back(&c);
      all_base += tile_units(c.a, 1, 0).count;  // one thread: parts = 1, so count = tiles x kv heads
      macs += attention_macs(c.a);
    }
    const int nth = macs < kMinMacsForThreads ? 1 : pool.num_threads();
    std::vector<TileUnits> tus;
    std::vector<int64_t> first{0};  // first unit of each tiled call
    for (const AttentionCall* c : tiled) {
      tus.push_back(tile_units(c->a, nth, all_base - tile_units(c->a, 1, 0).count));
      first.push_back(first.back() + tus.back().count);
    }
    auto call_of = [&](int64_t u) { return size_t(std::upper_bound(first.begin(), first.end(), u) - first.begin() - 1); };
    auto units = [&](int64_t u0, int64_t u1) {
      thread_local TileScratch scratch;
      for (int64_t u = u0; u < u1; ++u) {
        const size_t i = call_of(u);
        const AttentionCall& c = *tiled[i];
        if (c.kv_f16)
          run_unit(c.a, c.q, static_cast<const uint16_t*>(c.k), static_cast<const uint16_t*>(c.v), c.mask, c.o, tus[i],
                   u - first[i], simd512, scratch);
        else
          run_unit(c.a, c.q, static_cast<const float*>(c.k), static_cast<const float*>(c.v), c.mask, c.o, tus[i],
                   u - first[i], simd512, scratch);
      }
    };
    if (nth == 1) return units(0, first.back());
    const std::vector<int64_t> bounds = balanced_bounds(first.back(), nth, [&](int64_t u) {
      const size_t i = call_of(u);
      return unit_cost(tiled[i]->a, tus[i], u - first[i]);
    });
    pool.run([&](int tid, int) { units(bounds[tid], bounds[tid + 1]); });
    return;
  }
#endif
  for (const AttentionCall& c : calls) attention(c.a, c.q, c.k, c.v, c.kv_f16, c.mask, c.o, pool);
}

}  // namespace eyas::cpu
