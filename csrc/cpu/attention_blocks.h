// Building blocks of the CPU attention kernels (attention.cpp: the tile path; attention_split.cpp:
// long contexts split by keys and columns). Every block runs the per-(query, head) reduction that
// attention.cpp's header comment defines, in the same order, so any mix of them gives the same bits.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "cpu/softmax_exp.h"
#include "metal/kernel_args.h"

namespace eyas::cpu::attn {

constexpr int kMaxHeadDim = 512;  // the kernels' stack buffers; larger heads are refused at the op

// Writes query i's visible new slots after the prefix part of `slots` (filled once per thread).
inline int collect_new_slots(const AttentionArgs& a, const uint8_t* mask, int i, int32_t* slots) {
  int n = a.prefix_len;
  const int self = a.n_new - a.n_q + i;  // query i's own new slot
  const uint8_t* row = mask ? mask + int64_t(i) * a.n_new : nullptr;
  for (int j = 0; j < a.n_new; ++j)
    if (row ? row[j] != 0 : j <= self) slots[n++] = a.prefix_len + j;
  return n;
}

// Length of a query's slot list and of an item's score row (a query sees at most prefix + new keys;
// +16 so masked 16-wide stores past the end stay inside).
inline int64_t row_stride(const AttentionArgs& a) { return int64_t(a.prefix_len) + a.n_new + 16; }

// End of the run of positions [from, n) whose slot is the position itself (sl[p] == p): their rows are
// addressed directly, without lookups.
inline int identity_run(const int32_t* sl, int from, int n) {
  while (from < n && sl[from] == from) ++from;
  return from;
}

// f(std::integral_constant<int, G>{}, j0) for the G in [1, MaxG] that equals g.
template <int MaxG, typename F, int... Gs>
void call_with_group(int g, int j0, F& f, std::integer_sequence<int, Gs...>) {
  ((g == Gs + 1 ? (f(std::integral_constant<int, Gs + 1>{}, j0), 0) : 0), ...);
}

// Calls f(std::integral_constant<int, G>, j0) for consecutive groups [j0, j0 + G) of `items`, G <= MaxG
// and the groups as even as they can be (MaxG 4: 5 items as 3 + 2, 9 as 3 + 3 + 3).
template <int MaxG = 4, typename F>
void for_item_groups(int items, F&& f) {
  const int groups = (items + MaxG - 1) / MaxG;
  for (int k = 0, j0 = 0; k < groups; ++k) {
    const int j1 = int(int64_t(items) * (k + 1) / groups);
    call_with_group<MaxG>(j1 - j0, j0, f, std::make_integer_sequence<int, MaxG>{});
    j0 = j1;
  }
}

#if EYAS_X86
// 16 cache elements as floats.
__attribute__((target("avx512f"))) inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
__attribute__((target("avx512f"))) inline __m512 load16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Folds 16 lane-accumulators at once: lane j of the result is fold16(A[j]), with exactly fold16's
// additions (lanes[l] + lanes[l + s], s = 8, 4, 2, 1), so every score has the scalar path's bits.
__attribute__((target("avx512f"), always_inline)) inline __m512 fold16_transposed(const __m512* A) {
  __m512 B[8], C[4], Dv[2];
  for (int j = 0; j < 8; ++j)  // lanes l + (l + 8)
    B[j] = _mm512_add_ps(_mm512_shuffle_f32x4(A[j], A[j + 8], 0x44), _mm512_shuffle_f32x4(A[j], A[j + 8], 0xEE));
  for (int j = 0; j < 4; ++j)  // lanes l + (l + 4)
    C[j] = _mm512_add_ps(_mm512_shuffle_f32x4(B[j], B[j + 4], 0x88), _mm512_shuffle_f32x4(B[j], B[j + 4], 0xDD));
  for (int j = 0; j < 2; ++j) {  // lanes l + (l + 2)
    const __m512d c0 = _mm512_castps_pd(C[j]), c1 = _mm512_castps_pd(C[j + 2]);
    Dv[j] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(c0, c1)), _mm512_castpd_ps(_mm512_unpackhi_pd(c0, c1)));
  }
  // lanes l + (l + 1); the result holds accumulator idx[p] in lane p, put back in order.
  const __m512 E = _mm512_add_ps(_mm512_shuffle_ps(Dv[0], Dv[1], 0x88), _mm512_shuffle_ps(Dv[0], Dv[1], 0xDD));
  const __m512i idx = _mm512_setr_epi32(0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15);
  return _mm512_permutexvar_ps(idx, E);
}

// Scores of up to 16 keys at once: 16 lane-accumulators per key, then the transposing fold.
// kp(k): row of key k of the 16 (unused ones repeat a valid row).
template <typename KeyRow>
__attribute__((target("avx512f"), always_inline)) inline __m512 scores16(const float* qr, KeyRow kp, int D) {
  __m512 A[16];
  for (int k = 0; k < 16; ++k) A[k] = _mm512_setzero_ps();
  for (int c = 0; c < D; c += 16) {
    const __m512 qv = _mm512_loadu_ps(qr + c);
#pragma GCC unroll 16
    for (int k = 0; k < 16; ++k) A[k] = _mm512_fmadd_ps(qv, load16(kp(k) + c), A[k]);
  }
  return fold16_transposed(A);
}

// Software prefetch distance of the shared-row passes (hardware prefetch alone left the cold K/V
// stream at ~6 GB/s per thread).
constexpr int kPrefetchBytes = 8192;
constexpr int kPrefetchRows = 64;

// Scores of G items (query rows qr[j]) x KB consecutive key rows kb[k * D] (G * KB <= 16; keys past
// nk repeat row 0): lane j * KB + k holds item j's score of key k. Each key row is loaded (and, from an
// F16 cache, converted) once for all G items; every (item, key) runs scores16's operations, so the
// bits are the same.
template <int G, int KB, typename KV>
__attribute__((target("avx512f"), always_inline)) inline __m512 scores_shared(const float* const* qr, const KV* kb,
                                                                            int nk, int D) {
  static_assert(G * KB <= 16);
  __m512 A[16];
  for (int k = 0; k < 16; ++k) A[k] = _mm512_setzero_ps();
  for (int c = 0; c < D; c += 16) {
    __m512 qv[G];
#pragma GCC unroll 4
    for (int j = 0; j < G; ++j) qv[j] = _mm512_loadu_ps(qr[j] + c);
#pragma GCC unroll 16
    for (int k = 0; k < KB; ++k) {
      const __m512 kv = load16(kb + int64_t(k < nk ? k : 0) * D + c);
#pragma GCC unroll 4
      for (int j = 0; j < G; ++j) A[j * KB + k] = _mm512_fmadd_ps(qv[j], kv, A[j * KB + k]);
    }
  }
  return fold16_transposed(A);
}

// Shared rows [p0, p1) (consecutive slots) of G items: s[j][p] = score * scale. vh: the same kv head's
// V rows to request into L2 alongside (the V pass then reads them from cache; see attention_split.cpp),
// or null.
template <int G, typename KV>
__attribute__((target("avx512f"))) void scores_shared_range(const float* const* qr, const KV* kh, int p0, int p1, int D,
                                                             float scale, float* const* s, const KV* vh = nullptr) {
  constexpr int KB = G == 1 ? 16 : G == 2 ? 8 : G == 3 ? 5 : 4;
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 sc_v = _mm512_set1_ps(scale);
  const char* pf = reinterpret_cast<const char*>(kh + int64_t(p0) * D) + kPrefetchBytes;
  const char* vpf = vh ? reinterpret_cast<const char*>(vh + int64_t(p0) * D) : nullptr;
  const char* vpf_end = vh ? reinterpret_cast<const char*>(vh + int64_t(p1) * D) : nullptr;
  for (int p = p0; p < p1; p += KB) {
    const char* pf_end = reinterpret_cast<const char*>(kh + int64_t(p + KB) * D) + kPrefetchBytes;
    for (; pf < pf_end; pf += 64) {
      _mm_prefetch(pf, _MM_HINT_T0);
      if (vpf && vpf < vpf_end) _mm_prefetch(vpf, _MM_HINT_T1), vpf += 64;
    }
    const int nk = std::min(KB, p1 - p);
    const __m512 sv = _mm512_mul_ps(scores_shared<G, KB>(qr, kh + int64_t(p) * D, nk, D), sc_v);
#pragma GCC unroll 4
    for (int j = 0; j < G; ++j) {  // item j's lanes to lane 0 on
      const __m512 sj = j == 0 ? sv : _mm512_permutexvar_ps(_mm512_add_epi32(iota, _mm512_set1_epi32(j * KB)), sv);
      _mm512_mask_storeu_ps(s[j] + p, tail_mask(nk), sj);
    }
  }
}

// Scores of G items (query rows qr[j]) x the 16 keys of one transposed block kt[d * 16 + k] (key k's
// row as column k): lane k of out[j] is item j's score of key k, unscaled. Keys sit in lanes, so
// lane accumulator l of every key is one register, A_l = sum over c of q[c + l] * k[c + l] by FMA
// from zero, and fold16's additions (A_l + A_l+8, then + 4, + 2, + 1) are vertical: scores16's
// operations and bits without its transposing shuffles. Depth-first over the fold keeps ~6
// registers per item.
// b[j] = A_l + A_l+8 of item j over the 16 keys of block kt.
template <int G>
__attribute__((target("avx512f"), always_inline)) inline void kt_lane_pair(const float* const* qr, const float* kt,
                                                                          int D, int l, __m512* b) {
  __m512 lo[G], hi[G];
#pragma GCC unroll 4
  for (int j = 0; j < G; ++j) lo[j] = hi[j] = _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int c = 0; c < D; c += 16) {
    const __m512 kl = _mm512_loadu_ps(kt + (c + l) * 16), kh = _mm512_loadu_ps(kt + (c + l + 8) * 16);
#pragma GCC unroll 4
    for (int j = 0; j < G; ++j) {
      lo[j] = _mm512_fmadd_ps(_mm512_set1_ps(qr[j][c + l]), kl, lo[j]);
      hi[j] = _mm512_fmadd_ps(_mm512_set1_ps(qr[j][c + l + 8]), kh, hi[j]);
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < G; ++j) b[j] = _mm512_add_ps(lo[j], hi[j]);
}

// Fold level `step` (4: C_l = B_l + B_l+4, 2: D_l = C_l + C_l+2, 1: the score D_0 + D_1) of lane l, depth first.
template <int G, int Step>
__attribute__((target("avx512f"), always_inline)) inline void kt_fold(const float* const* qr, const float* kt, int D,
                                                                     int l, __m512* out) {
  __m512 x[G], y[G];
  if constexpr (Step == 4) {
    kt_lane_pair<G>(qr, kt, D, l, x), kt_lane_pair<G>(qr, kt, D, l + 4, y);
  } else {
    kt_fold<G, Step * 2>(qr, kt, D, l, x), kt_fold<G, Step * 2>(qr, kt, D, l + Step, y);
  }
#pragma GCC unroll 4
  for (int j = 0; j < G; ++j) out[j] = _mm512_add_ps(x[j], y[j]);
}

// Scores of G items (query rows qr[j]) x the 16 keys of one transposed block kt[d * 16 + k] (key k's
// row as column k): lane k of out[j] is item j's score of key k, unscaled. Keys sit in lanes, so
// lane accumulator l of every key is one register, A_l = sum over c of q[c + l] * k[c + l] by FMA
// from zero, and fold16's additions (A_l + A_l+8, then + 4, + 2, + 1) are vertical: scores16's
// operations and bits without its transposing shuffles. Depth first, the fold keeps ~6 registers
// per item.
template <int G>
__attribute__((target("avx512f"), always_inline)) inline void scores_kt16(const float* const* qr, const float* kt, int D,
                                                                         __m512* out) {
  kt_fold<G, 1>(qr, kt, D, 0, out);
}

// In place: r[k] (key k's 16 values) -> r[j] (value j of the 16 keys, key k in lane k). Four rounds of
// two-register shuffles: pairs of floats, of float pairs, then 128-bit lanes twice.
__attribute__((target("avx512f"), always_inline)) inline void transpose16x16(__m512* r) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2)
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  for (int i = 0; i < 16; i += 4)  // r[i + m]: in 128-bit lane L, value 4L + m of keys i .. i + 3
    for (int h = 0; h < 2; ++h) {
      const __m512d a = _mm512_castps_pd(t[i + h]), b = _mm512_castps_pd(t[i + h + 2]);
      r[i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
      r[i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    }
  for (int m = 0; m < 4; ++m) {  // gather lane L of the four key quartets, L = 0, 2 | 1, 3
    t[m] = _mm512_shuffle_f32x4(r[m], r[4 + m], 0x88), t[4 + m] = _mm512_shuffle_f32x4(r[m], r[4 + m], 0xDD);
    t[8 + m] = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0x88), t[12 + m] = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0xDD);
  }
  for (int m = 0; m < 4; ++m) {  // value 4L + m for L = 0, 2 (from t[m]) and L = 1, 3 (from t[4 + m])
    r[m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0x88), r[8 + m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0xDD);
    r[4 + m] = _mm512_shuffle_f32x4(t[4 + m], t[12 + m], 0x88), r[12 + m] = _mm512_shuffle_f32x4(t[4 + m], t[12 + m], 0xDD);
  }
}

// The 16 consecutive K rows kb[k * D] (k < nk; the rest zero) as one transposed block kt[d * 16 + k],
// the layout scores_kt16 reads. Exact (an F16 row converts exactly), so the scores keep their bits.
template <typename KV>
__attribute__((target("avx512f"), always_inline)) inline void transpose_k_block(const KV* kb, int nk, int D, float* kt) {
  for (int c = 0; c < D; c += 16) {
    __m512 r[16];
#pragma GCC unroll 16
    for (int k = 0; k < 16; ++k) r[k] = k < nk ? load16(kb + int64_t(k) * D + c) : _mm512_setzero_ps();
    transpose16x16(r);
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) _mm512_storeu_ps(kt + (c + j) * 16, r[j]);
  }
}

// Keys [p, p + nk) (nk <= 16) of G items from one transposed block kt: s[j][p + k] = score * scale.
template <int G>
__attribute__((target("avx512f"))) void scores_kt_block(const float* const* qr, const float* kt, int p, int nk, int D,
                                                         float scale, float* const* s) {
  __m512 out[G];
  scores_kt16<G>(qr, kt, D, out);
  const __mmask16 mk = tail_mask(nk);
#pragma GCC unroll 4
  for (int j = 0; j < G; ++j) _mm512_mask_storeu_ps(s[j] + p, mk, _mm512_mul_ps(out[j], _mm512_set1_ps(scale)));
}

// Shared positions [p0, p1) (p0 a multiple of 16) of G items from the transposed K blocks of their kv
// head (kt: block p / 16 at kt + p * D): s[j][p] = score * scale.
template <int G>
__attribute__((target("avx512f"))) void scores_kt_range(const float* const* qr, const float* kt, int p0, int p1, int D,
                                                         float scale, float* const* s) {
  const __m512 sc_v = _mm512_set1_ps(scale);
  for (int p = p0; p < p1; p += 16) {
    __m512 out[G];
    scores_kt16<G>(qr, kt + int64_t(p) * D, D, out);
    const __mmask16 mk = tail_mask(std::min(16, p1 - p));
#pragma GCC unroll 4
    for (int j = 0; j < G; ++j) _mm512_mask_storeu_ps(s[j] + p, mk, _mm512_mul_ps(out[j], sc_v));
  }
}

// One item's scores over its positions [p0, p1): s[p] = score * scale. Positions below `ident` are
// slots 0, 1, ... (rows addressed directly), the rest are looked up in its slot list sl.
template <typename KV>
__attribute__((target("avx512f"))) void item_scores(const float* qr, const KV* kh, const int32_t* sl, int ident,
                                                     int p0, int p1, int D, float scale, float* s) {
  const __m512 sc_v = _mm512_set1_ps(scale);
  const KV* kp[16];
  for (; p0 < p1; p0 += 16) {
    const int nk = std::min(16, p1 - p0);
    __m512 sv;
    if (p0 + 16 <= ident) {  // 16 keys in consecutive rows
      const KV* kb = kh + int64_t(p0) * D;
      sv = scores16(qr, [kb, D](int k) { return kb + int64_t(k) * D; }, D);
    } else {
      for (int k = 0; k < 16; ++k) kp[k] = kh + int64_t(sl[p0 + (k < nk ? k : 0)]) * D;
      sv = scores16(qr, [&kp](int k) { return kp[k]; }, D);
    }
    _mm512_mask_storeu_ps(s + p0, tail_mask(nk), _mm512_mul_ps(sv, sc_v));
  }
}

// acc0[j]/acc1[j] (in memory, D floats each) += e[j][p] * v[p][d0 .. d0 + 16 NG) for p in [p0, p1) of
// consecutive rows v[p] = vh + p D, for G items at once (each V row loaded once for all): even p into
// acc0, odd into acc1, in p order, as pv_block does per item. p0 is even.
template <int G, int NG, typename KV>
__attribute__((target("avx512f"), always_inline)) inline void pv_shared_block(const KV* vh, const float* const* e, int p0,
                                                                             int p1, int D, int d0, float* const* acc0,
                                                                             float* const* acc1) {
  __m512 a0[G][NG], a1[G][NG];
  for (int j = 0; j < G; ++j)
    for (int g = 0; g < NG; ++g)
      a0[j][g] = _mm512_loadu_ps(acc0[j] + d0 + 16 * g), a1[j][g] = _mm512_loadu_ps(acc1[j] + d0 + 16 * g);
  int p = p0;
  for (; p + 2 <= p1; p += 2) {
    const KV* v0 = vh + int64_t(p) * D + d0;
    _mm_prefetch(reinterpret_cast<const char*>(v0 + kPrefetchRows * D), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(v0 + (kPrefetchRows + 1) * D), _MM_HINT_T0);
    const KV* v1 = v0 + D;
    __m512 x0[NG], x1[NG];
#pragma GCC unroll 4
    for (int g = 0; g < NG; ++g) x0[g] = load16(v0 + 16 * g), x1[g] = load16(v1 + 16 * g);
#pragma GCC unroll 16
    for (int j = 0; j < G; ++j) {
      const __m512 e0 = _mm512_set1_ps(e[j][p]), e1 = _mm512_set1_ps(e[j][p + 1]);
#pragma GCC unroll 4
      for (int g = 0; g < NG; ++g) {
        a0[j][g] = _mm512_fmadd_ps(e0, x0[g], a0[j][g]);
        a1[j][g] = _mm512_fmadd_ps(e1, x1[g], a1[j][g]);
      }
    }
  }
  if (p < p1) {
    const KV* v0 = vh + int64_t(p) * D + d0;
    for (int j = 0; j < G; ++j) {
      const __m512 e0 = _mm512_set1_ps(e[j][p]);
      for (int g = 0; g < NG; ++g) a0[j][g] = _mm512_fmadd_ps(e0, load16(v0 + 16 * g), a0[j][g]);
    }
  }
  for (int j = 0; j < G; ++j)
    for (int g = 0; g < NG; ++g)
      _mm512_storeu_ps(acc0[j] + d0 + 16 * g, a0[j][g]), _mm512_storeu_ps(acc1[j] + d0 + 16 * g, a1[j][g]);
}

// pv_shared_block over all of D (a multiple of 16): 64-column blocks for up to 2 items, 32 for more
// (so the accumulators stay in registers), then the tail.
template <int G, typename KV>
__attribute__((target("avx512f"))) void pv_shared_range(const KV* vh, const float* const* e, int p0, int p1, int D,
                                                         float* const* acc0, float* const* acc1) {
  constexpr int NG = G <= 2 ? 4 : 2;
  int d0 = 0;
  for (; d0 + 16 * NG <= D; d0 += 16 * NG) pv_shared_block<G, NG>(vh, e, p0, p1, D, d0, acc0, acc1);
  for (; d0 < D; d0 += 16) pv_shared_block<G, 1>(vh, e, p0, p1, D, d0, acc0, acc1);
}

// acc0/acc1 (in memory, D floats each) += e[p] * v_row(p)[d0 .. d0 + 16 NG) for p in [p0, p1): even p
// into acc0, odd p into acc1, in p order. p0 is even, so resuming block after block keeps the sequence.
template <int NG, typename ValueRow>
__attribute__((target("avx512f"), always_inline)) inline void pv_block(ValueRow v_row, const float* e, int p0, int p1,
                                                                      int d0, float* acc0, float* acc1) {
  __m512 a0[NG], a1[NG];
  for (int g = 0; g < NG; ++g) a0[g] = _mm512_loadu_ps(acc0 + d0 + 16 * g), a1[g] = _mm512_loadu_ps(acc1 + d0 + 16 * g);
  int p = p0;
  for (; p + 2 <= p1; p += 2) {
    const auto* v0 = v_row(p) + d0;
    const auto* v1 = v_row(p + 1) + d0;
    const __m512 e0 = _mm512_set1_ps(e[p]), e1 = _mm512_set1_ps(e[p + 1]);
#pragma GCC unroll 4
    for (int g = 0; g < NG; ++g) {
      a0[g] = _mm512_fmadd_ps(e0, load16(v0 + 16 * g), a0[g]);
      a1[g] = _mm512_fmadd_ps(e1, load16(v1 + 16 * g), a1[g]);
    }
  }
  if (p < p1) {
    const auto* v0 = v_row(p) + d0;
    const __m512 e0 = _mm512_set1_ps(e[p]);
    for (int g = 0; g < NG; ++g) a0[g] = _mm512_fmadd_ps(e0, load16(v0 + 16 * g), a0[g]);
  }
  for (int g = 0; g < NG; ++g) _mm512_storeu_ps(acc0 + d0 + 16 * g, a0[g]), _mm512_storeu_ps(acc1 + d0 + 16 * g, a1[g]);
}

template <typename ValueRow>
__attribute__((target("avx512f"))) void pv_rows(ValueRow v_row, const float* e, int p0, int p1, int D, float* acc0,
                                                float* acc1) {
  int d0 = 0;
  for (; d0 + 64 <= D; d0 += 64) pv_block<4>(v_row, e, p0, p1, d0, acc0, acc1);
  switch ((D - d0) / 16) {
    case 3: pv_block<3>(v_row, e, p0, p1, d0, acc0, acc1); break;
    case 2: pv_block<2>(v_row, e, p0, p1, d0, acc0, acc1); break;
    case 1: pv_block<1>(v_row, e, p0, p1, d0, acc0, acc1); break;
    default: break;
  }
}

// Visible positions [p0, p1) of one item (p0 even). Positions below `ident` are slots 0, 1, ... in
// order (the committed prefix at least), so their rows are addressed directly (no slot lookups:
// ~2x faster per key); the split point is even so the even/odd accumulator sequence carries on.
template <typename KV>
__attribute__((target("avx512f"))) void pv_range(const KV* vh, const int32_t* slots, const float* e, int p0, int p1,
                                                 int ident, int D, float* acc0, float* acc1) {
  const int split = std::max(p0, std::min(p1, ident & ~1));
  if (split > p0) pv_rows([vh, D](int p) { return vh + int64_t(p) * D; }, e, p0, split, D, acc0, acc1);
  if (p1 > split)
    pv_rows([vh, slots, D](int p) { return vh + int64_t(slots[p]) * D; }, e, split, p1, D, acc0, acc1);
}

// pv_shared_block over keys [0, n) and columns [d0, d0 + 16 NG) only; a plain (not always_inline)
// function, so the generic lambdas of for_item_groups, which lack the avx512f target, can call it.
template <int G, int NG, typename KV>
__attribute__((target("avx512f"))) void pv_shared_cols(const KV* vh, const float* const* e, int n, int D, int d0,
                                                        float* const* acc0, float* const* acc1) {
  pv_shared_block<G, NG>(vh, e, 0, n, D, d0, acc0, acc1);
}

// In place: s[p] = exp(s[p] - max s) over [0, n); returns their fold16 sum (lanes p % 16).
__attribute__((target("avx512f"))) inline float exp_and_sum(float* s, int n) {
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 mv = ninf;
  for (int p0 = 0; p0 < n; p0 += 16) mv = _mm512_max_ps(mv, _mm512_mask_loadu_ps(ninf, tail_mask(n - p0), s + p0));
  const __m512 mb = _mm512_set1_ps(_mm512_reduce_max_ps(mv));  // max is exact in any order
  __m512 lanes = _mm512_setzero_ps();
  for (int p0 = 0; p0 < n; p0 += 16) {
    const __mmask16 mk = tail_mask(n - p0);
    const __m512 e = exp_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, s + p0), mb));
    _mm512_mask_storeu_ps(s + p0, mk, e);
    lanes = _mm512_add_ps(lanes, _mm512_maskz_mov_ps(mk, e));
  }
  return fold16_avx512(lanes);
}
#endif

}  // namespace eyas::cpu::attn
