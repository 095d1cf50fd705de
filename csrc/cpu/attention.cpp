// Tree attention. For each (query, head): collect the visible key slots (prefix in slot order, then
// the visible new slots in slot order), then run one fixed reduction over that list:
//   1. s[p] = fold16(lanes of q * k[p]) * scale   (16 lanes over D, folded 8/4/2/1)
//   2. m = max s; e[p] = exp(s[p] - m); l = fold16(e summed into lane p % 16)
//   3. o = (sum over even p of e[p] v[p] + sum over odd p of e[p] v[p]) / l, each sum in p order
// Every step depends only on the position p in the visible list, so a tree query gives the same bits
// as a T=1 decode over the same keys laid out contiguously, at any T and thread count.
#include "cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/softmax_exp.h"

namespace eyas::cpu {
namespace {

constexpr int kMaxHeadDim = 512;

int collect_slots(const AttentionArgs& a, const uint8_t* mask, int i, int32_t* slots) {
  int n = 0;
  for (int s = 0; s < a.prefix_len; ++s) slots[n++] = s;
  const int self = a.n_new - a.n_q + i;  // query i's own new slot
  const uint8_t* row = mask ? mask + int64_t(i) * a.n_new : nullptr;
  for (int j = 0; j < a.n_new; ++j)
    if (row ? row[j] != 0 : j <= self) slots[n++] = a.prefix_len + j;
  return n;
}

// kh, vh: one KV head [capacity, D]; s: scratch [n]; out: [D].
void attend_scalar(const float* qr, const float* kh, const float* vh, const int32_t* slots, int n, int D, float scale,
                   float* s, float* out) {
  if (n == 0) {
    std::fill(out, out + D, 0.0f);
    return;
  }
  for (int p = 0; p < n; ++p) {
    const float* kr = kh + int64_t(slots[p]) * D;
    float lanes[16] = {0};
    for (int c = 0; c < D; c += 16)
      for (int l = 0; l < 16; ++l) lanes[l] = std::fma(qr[c + l], kr[c + l], lanes[l]);
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
    const float* vr = vh + int64_t(slots[p]) * D;
    float* ac = acc[p & 1];
    for (int d = 0; d < D; ++d) ac[d] = std::fma(s[p], vr[d], ac[d]);
  }
  for (int d = 0; d < D; ++d) out[d] = (acc[0][d] + acc[1][d]) / l;
}

#if EYAS_X86
// Scores of up to 16 keys at once: 16 lane-accumulators per key, then a transposing reduction whose
// additions are exactly fold16's (lanes[l] + lanes[l + s], s = 8, 4, 2, 1), so each key's score has the
// bits of the scalar path. kp: 16 row pointers (unused ones repeat a valid row).
__attribute__((target("avx512f"))) inline __m512 scores16(const float* qr, const float* const* kp, int D) {
  __m512 A[16];
  for (int k = 0; k < 16; ++k) A[k] = _mm512_setzero_ps();
  for (int c = 0; c < D; c += 16) {
    const __m512 qv = _mm512_loadu_ps(qr + c);
#pragma GCC unroll 16
    for (int k = 0; k < 16; ++k) A[k] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(kp[k] + c), A[k]);
  }
  __m512 B[8], C[4], Dv[2];
  for (int j = 0; j < 8; ++j)  // lanes l + (l + 8)
    B[j] = _mm512_add_ps(_mm512_shuffle_f32x4(A[j], A[j + 8], 0x44), _mm512_shuffle_f32x4(A[j], A[j + 8], 0xEE));
  for (int j = 0; j < 4; ++j)  // lanes l + (l + 4)
    C[j] = _mm512_add_ps(_mm512_shuffle_f32x4(B[j], B[j + 4], 0x88), _mm512_shuffle_f32x4(B[j], B[j + 4], 0xDD));
  for (int j = 0; j < 2; ++j) {  // lanes l + (l + 2)
    const __m512d c0 = _mm512_castps_pd(C[j]), c1 = _mm512_castps_pd(C[j + 2]);
    Dv[j] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(c0, c1)), _mm512_castpd_ps(_mm512_unpackhi_pd(c0, c1)));
  }
  // lanes l + (l + 1); the result holds key idx[p] in lane p, put back in key order.
  const __m512 E = _mm512_add_ps(_mm512_shuffle_ps(Dv[0], Dv[1], 0x88), _mm512_shuffle_ps(Dv[0], Dv[1], 0xDD));
  const __m512i idx = _mm512_setr_epi32(0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15);
  return _mm512_permutexvar_ps(idx, E);
}

// acc[j][g] += e[p] * v[p][16g..] for chunks g < NG, j = p & 1, in p order.
template <int NG>
__attribute__((target("avx512f"))) inline void pv_group(const float* vh, const int32_t* slots, const float* e, int n,
                                                       int D, int d0, float* out, float l) {
  __m512 acc0[NG], acc1[NG];
  for (int g = 0; g < NG; ++g) acc0[g] = acc1[g] = _mm512_setzero_ps();
  int p = 0;
  for (; p + 2 <= n; p += 2) {
    const float* v0 = vh + int64_t(slots[p]) * D + d0;
    const float* v1 = vh + int64_t(slots[p + 1]) * D + d0;
    const __m512 e0 = _mm512_set1_ps(e[p]), e1 = _mm512_set1_ps(e[p + 1]);
#pragma GCC unroll 4
    for (int g = 0; g < NG; ++g) {
      acc0[g] = _mm512_fmadd_ps(e0, _mm512_loadu_ps(v0 + 16 * g), acc0[g]);
      acc1[g] = _mm512_fmadd_ps(e1, _mm512_loadu_ps(v1 + 16 * g), acc1[g]);
    }
  }
  if (p < n) {
    const float* v0 = vh + int64_t(slots[p]) * D + d0;
    const __m512 e0 = _mm512_set1_ps(e[p]);
    for (int g = 0; g < NG; ++g) acc0[g] = _mm512_fmadd_ps(e0, _mm512_loadu_ps(v0 + 16 * g), acc0[g]);
  }
  const __m512 lv = _mm512_set1_ps(l);
  for (int g = 0; g < NG; ++g) _mm512_storeu_ps(out + d0 + 16 * g, _mm512_div_ps(_mm512_add_ps(acc0[g], acc1[g]), lv));
}

__attribute__((target("avx512f"))) void attend_avx512(const float* qr, const float* kh, const float* vh,
                                                      const int32_t* slots, int n, int D, float scale, float* s,
                                                      float* out) {
  if (n == 0) {
    std::fill(out, out + D, 0.0f);
    return;
  }
  const __m512 sc = _mm512_set1_ps(scale);
  const float* kp[16];
  __m512 mv = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int p0 = 0; p0 < n; p0 += 16) {
    const int nk = std::min(16, n - p0);
    for (int k = 0; k < 16; ++k) kp[k] = kh + int64_t(slots[p0 + (k < nk ? k : 0)]) * D;
    const __mmask16 mk = tail_mask(nk);
    const __m512 sv = _mm512_mul_ps(scores16(qr, kp, D), sc);
    _mm512_mask_storeu_ps(s + p0, mk, sv);
    mv = _mm512_mask_max_ps(mv, mk, mv, sv);
  }
  const float m = _mm512_reduce_max_ps(mv);  // max is exact: any order gives the same value
  const __m512 mb = _mm512_set1_ps(m);
  __m512 lanes = _mm512_setzero_ps();
  for (int p0 = 0; p0 < n; p0 += 16) {
    const __mmask16 mk = tail_mask(n - p0);
    const __m512 e = exp_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, s + p0), mb));
    _mm512_mask_storeu_ps(s + p0, mk, e);
    lanes = _mm512_add_ps(lanes, _mm512_maskz_mov_ps(mk, e));
  }
  const float l = fold16_avx512(lanes);
  int d0 = 0;
  for (; d0 + 64 <= D; d0 += 64) pv_group<4>(vh, slots, s, n, D, d0, out, l);
  switch ((D - d0) / 16) {
    case 3: pv_group<3>(vh, slots, s, n, D, d0, out, l); break;
    case 2: pv_group<2>(vh, slots, s, n, D, d0, out, l); break;
    case 1: pv_group<1>(vh, slots, s, n, D, d0, out, l); break;
    default: break;
  }
}
#endif

}  // namespace

void attention(const AttentionArgs& a, const float* q, const float* k, const float* v, const uint8_t* mask, float* o,
               ThreadPool& pool) {
  const int D = a.head_dim, group = a.n_heads / a.n_kv_heads;
  const int max_keys = a.prefix_len + a.n_new;
  const bool simd = use_avx512();
  pool.run([&](int tid, int nth) {
    int64_t w0, w1;
    ThreadPool::split(int64_t(a.n_q) * a.n_heads, tid, nth, 1, &w0, &w1);
    if (w0 >= w1) return;
    thread_local std::vector<int32_t> slots;
    thread_local std::vector<float> scores;
    if (int(slots.size()) < max_keys) slots.resize(max_keys), scores.resize(max_keys + 16);
    int cur_q = -1, n = 0;
    for (int64_t w = w0; w < w1; ++w) {
      const int i = int(w / a.n_heads), h = int(w % a.n_heads);
      if (i != cur_q) n = collect_slots(a, mask, i, slots.data()), cur_q = i;
      const int64_t kv_off = int64_t(h / group) * a.capacity * D;
      const float* qr = q + (int64_t(i) * a.n_heads + h) * D;
      float* out = o + (int64_t(i) * a.n_heads + h) * D;
#if EYAS_X86
      if (simd) {
        attend_avx512(qr, k + kv_off, v + kv_off, slots.data(), n, D, a.scale, scores.data(), out);
        continue;
      }
#endif
      attend_scalar(qr, k + kv_off, v + kv_off, slots.data(), n, D, a.scale, scores.data(), out);
    }
  });
}

}  // namespace eyas::cpu
