// Gated DeltaNet kernels: the token-sequential delta rule (no chunked WY form, whose rounding
// would differ between prefill, decode and trees) with fixed-order sums.
#include "cpu/gdn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/elementwise.h"
#include "cpu/softmax_exp.h"

namespace eyas::cpu {

namespace {

// sum of x[i]^2 in 8 lanes folded in a fixed order.
float sum_sq(const float* x, int n) {
  float lanes[8] = {0};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lanes[l] += x[i + l] * x[i + l];
  for (; i < n; ++i) lanes[i & 7] += x[i] * x[i];
  for (int s = 4; s >= 1; s /= 2)
    for (int l = 0; l < s; ++l) lanes[l] += lanes[l + s];
  return lanes[0];
}

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// One delta-rule step of one head, dst = update(src) (dst may be src); S is [Dk, Dv], value index fastest:
//   S' = alpha S;  delta = beta (v - S'^T k);  S = S' + k delta^T;  o = S^T q.
// kv, delta: [Dv] scratch. Every loop runs over the value index with no sum across it and no fused
// multiply-add (-ffp-contract=off), so the copies below, vectorized for each instruction set, give
// the same bits.
__attribute__((always_inline)) inline void delta_step_body(int dk, int dv, const float* src, float* dst,
                                                           const float* k, const float* v, const float* q, float alpha,
                                                           float beta, float* kv, float* delta, float* o) {
  for (int j = 0; j < dv; ++j) kv[j] = 0.0f;
  for (int i = 0; i < dk; ++i) {
    const float* s = src + int64_t(i) * dv;
    float* t = dst + int64_t(i) * dv;
    const float ki = k[i];
    for (int j = 0; j < dv; ++j) {
      const float sv = alpha * s[j];
      t[j] = sv;
      kv[j] += sv * ki;
    }
  }
  for (int j = 0; j < dv; ++j) delta[j] = beta * (v[j] - kv[j]), o[j] = 0.0f;
  for (int i = 0; i < dk; ++i) {
    float* t = dst + int64_t(i) * dv;
    const float ki = k[i], qi = q[i];
    for (int j = 0; j < dv; ++j) {
      const float sv = t[j] + ki * delta[j];
      t[j] = sv;
      o[j] += sv * qi;
    }
  }
}

using DeltaStep = void (*)(int, int, const float*, float*, const float*, const float*, const float*, float, float,
                           float*, float*, float*);

void delta_step_base(int dk, int dv, const float* src, float* dst, const float* k, const float* v, const float* q,
                     float alpha, float beta, float* kv, float* delta, float* o) {
  delta_step_body(dk, dv, src, dst, k, v, q, alpha, beta, kv, delta, o);
}

#if EYAS_X86
__attribute__((target("avx2"))) void delta_step_avx2(int dk, int dv, const float* src, float* dst, const float* k,
                                                     const float* v, const float* q, float alpha, float beta, float* kv,
                                                     float* delta, float* o) {
  delta_step_body(dk, dv, src, dst, k, v, q, alpha, beta, kv, delta, o);
}

__attribute__((target("avx512f"))) void delta_step_avx512(int dk, int dv, const float* src, float* dst, const float* k,
                                                          const float* v, const float* q, float alpha, float beta,
                                                          float* kv, float* delta, float* o) {
  delta_step_body(dk, dv, src, dst, k, v, q, alpha, beta, kv, delta, o);
}
#endif

// delta_step_body's operations for one decode row whose new state goes to a buffer other than the
// old one and is not read again in this call: its first pass only reads S (alpha S is formed again,
// the same rounding, in the second), and the second writes S' with streaming stores. A decode step's
// state (1 MB a layer at Qwen3.5-0.8B's 16 heads of 128 x 128) then moves through DRAM once each way,
// without the read that a cached store of the whole state first makes. dv: a multiple of 16; dst:
// 64-byte aligned rows. next: the state this thread reads after this one (the next head's) or null;
// its rows are prefetched to L2 during the second pass, which reads S from cache, so the next head's
// DRAM reads overlap this one's streamed writes (a decode step's core ~97 -> ~85 us a layer).
__attribute__((target("avx512f"))) void delta_step_streamed_avx512(int dk, int dv, const float* src, float* dst,
                                                                   const float* k, const float* v, const float* q,
                                                                   float alpha, float beta, float* kv, float* delta,
                                                                   float* o, const float* next) {
  const __m512 av = _mm512_set1_ps(alpha), bv = _mm512_set1_ps(beta);
  for (int j = 0; j < dv; j += 16) _mm512_storeu_ps(kv + j, _mm512_setzero_ps());
  for (int i = 0; i < dk; ++i) {
    const float* s = src + int64_t(i) * dv;
    const __m512 ki = _mm512_set1_ps(k[i]);
    for (int j = 0; j < dv; j += 16) {
      const __m512 sv = _mm512_mul_ps(av, _mm512_loadu_ps(s + j));
      _mm512_storeu_ps(kv + j, _mm512_add_ps(_mm512_loadu_ps(kv + j), _mm512_mul_ps(sv, ki)));
    }
  }
  for (int j = 0; j < dv; j += 16) {
    _mm512_storeu_ps(delta + j, _mm512_mul_ps(bv, _mm512_sub_ps(_mm512_loadu_ps(v + j), _mm512_loadu_ps(kv + j))));
    _mm512_storeu_ps(o + j, _mm512_setzero_ps());
  }
  for (int i = 0; i < dk; ++i) {
    const float* s = src + int64_t(i) * dv;
    float* t = dst + int64_t(i) * dv;
    const __m512 ki = _mm512_set1_ps(k[i]), qi = _mm512_set1_ps(q[i]);
    if (next)
      for (int j = 0; j < dv; j += 16)
        _mm_prefetch(reinterpret_cast<const char*>(next + int64_t(i) * dv + j), _MM_HINT_T1);
    for (int j = 0; j < dv; j += 16) {
      const __m512 sv = _mm512_add_ps(_mm512_mul_ps(av, _mm512_loadu_ps(s + j)), _mm512_mul_ps(ki, _mm512_loadu_ps(delta + j)));
      _mm512_stream_ps(t + j, sv);
      _mm512_storeu_ps(o + j, _mm512_add_ps(_mm512_loadu_ps(o + j), _mm512_mul_ps(sv, qi)));
    }
  }
}

#if EYAS_X86
// A chain of m rows of one head (a causal chunk: row t continues row t - 1) from `in` into `out` (may
// alias), kChainCols value columns at a time: a column's update reads only that column of S, so each
// block of S (dk x kChainCols floats, 32 KB at dk = 128) stays in L1 while every row passes over it,
// where delta_step moves the whole state (64 KB) through L2 twice a row. The four 16-column sums of a
// block run side by side, so their dependency chains overlap. Each column sees delta_step_body's
// operations in its order: the same bits. kn, qn: [m, dk] the rows' normalized k and q; alpha, beta:
// [m]; v[t], o[t]: row t's value and output rows of this head; blk: dk * kChainCols floats, 64-byte aligned.
constexpr int kChainCols = 64;

__attribute__((target("avx512f"))) void delta_chain_avx512(int dk, int dv, int m, const float* in, float* out,
                                                           const float* kn, const float* qn, const float* alpha,
                                                           const float* beta, const float* const* v, float* const* o,
                                                           float* blk) {
  constexpr int Z = kChainCols / 16;  // vectors a block row
  for (int j0 = 0; j0 < dv; j0 += kChainCols) {
    for (int i = 0; i < dk; ++i)
      for (int z = 0; z < Z; ++z) _mm512_store_ps(blk + (i * Z + z) * 16, _mm512_loadu_ps(in + int64_t(i) * dv + j0 + 16 * z));
    for (int t = 0; t < m; ++t) {
      const float* k = kn + int64_t(t) * dk;
      const float* q = qn + int64_t(t) * dk;
      const __m512 av = _mm512_set1_ps(alpha[t]), bv = _mm512_set1_ps(beta[t]);
      __m512 kv[Z], delta[Z], acc[Z];
      for (int z = 0; z < Z; ++z) kv[z] = _mm512_setzero_ps();
      for (int i = 0; i < dk; ++i) {
        const __m512 ki = _mm512_set1_ps(k[i]);
        for (int z = 0; z < Z; ++z) {
          float* b = blk + (i * Z + z) * 16;
          const __m512 sv = _mm512_mul_ps(av, _mm512_load_ps(b));
          _mm512_store_ps(b, sv);
          kv[z] = _mm512_add_ps(kv[z], _mm512_mul_ps(sv, ki));
        }
      }
      for (int z = 0; z < Z; ++z) {
        delta[z] = _mm512_mul_ps(bv, _mm512_sub_ps(_mm512_loadu_ps(v[t] + j0 + 16 * z), kv[z]));
        acc[z] = _mm512_setzero_ps();
      }
      for (int i = 0; i < dk; ++i) {
        const __m512 ki = _mm512_set1_ps(k[i]), qi = _mm512_set1_ps(q[i]);
        for (int z = 0; z < Z; ++z) {
          float* b = blk + (i * Z + z) * 16;
          const __m512 sv = _mm512_add_ps(_mm512_load_ps(b), _mm512_mul_ps(ki, delta[z]));
          _mm512_store_ps(b, sv);
          acc[z] = _mm512_add_ps(acc[z], _mm512_mul_ps(sv, qi));
        }
      }
      for (int z = 0; z < Z; ++z) _mm512_storeu_ps(o[t] + j0 + 16 * z, acc[z]);
    }
    for (int i = 0; i < dk; ++i)
      for (int z = 0; z < Z; ++z) _mm512_storeu_ps(out + int64_t(i) * dv + j0 + 16 * z, _mm512_load_ps(blk + (i * Z + z) * 16));
  }
}
#endif

// The widest copy the SIMD switch allows (capped in tests, which compare every level's bits).
DeltaStep delta_step() {
#if EYAS_X86
  if (use_avx512()) return &delta_step_avx512;
  if (use_avx2()) return &delta_step_avx2;
#endif
  return &delta_step_base;
}

// gdn_conv's channels [c0, c1) of one row: y[ch] = sum over taps j in order of w[ch, j] * win[j][ch],
// from 0.0f, one multiply and one add per tap (no fused multiply-add: -ffp-contract=off). The SIMD
// copies run 16 / 8 channels at once with the same operations on each channel, so every level gives
// the same bits; w's [C, K] rows are transposed in registers (K = 4, Qwen3.5's kernel).
using ConvRows = void (*)(int c0, int c1, int K, const float* const* win, const float* w, float* y);

constexpr int kConvChunk = 512;  // gdn_conv's and gdn_conv_state's unit of channels
constexpr int kConvAhead = 128;  // channels the AVX-512 conv prefetches ahead

inline void conv_rows_tail(int ch, int c1, int K, const float* const* win, const float* w, float* y) {
  for (; ch < c1; ++ch) {
    const float* wc = w + int64_t(ch) * K;
    float acc = 0.0f;
    for (int j = 0; j < K; ++j) acc += wc[j] * win[j][ch];
    y[ch] = acc;
  }
}

void conv_rows_base(int c0, int c1, int K, const float* const* win, const float* w, float* y) {
  conv_rows_tail(c0, c1, K, win, w, y);
}

#if EYAS_X86
__attribute__((target("avx2"))) void conv_rows4_avx2(int c0, int c1, int K, const float* const* win, const float* w,
                                                     float* y) {
  // v_a holds channels 2a, 2a+1 (one per 128-bit lane, 4 taps each); after the in-lane 4x4 transpose
  // element 4L + a is channel 2a + L, which the permute puts back in order.
  const __m256i fix = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const float *x0 = win[0], *x1 = win[1], *x2 = win[2], *x3 = win[3];
  int ch = c0;
  for (; ch + 8 <= c1; ch += 8) {
    const float* wc = w + int64_t(ch) * 4;
    const __m256 v0 = _mm256_loadu_ps(wc), v1 = _mm256_loadu_ps(wc + 8), v2 = _mm256_loadu_ps(wc + 16),
                 v3 = _mm256_loadu_ps(wc + 24);
    const __m256 t0 = _mm256_unpacklo_ps(v0, v1), t1 = _mm256_unpackhi_ps(v0, v1);
    const __m256 t2 = _mm256_unpacklo_ps(v2, v3), t3 = _mm256_unpackhi_ps(v2, v3);
    const __m256 w0 = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)), fix);
    const __m256 w1 = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)), fix);
    const __m256 w2 = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)), fix);
    const __m256 w3 = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2)), fix);
    __m256 acc = _mm256_setzero_ps();
    acc = _mm256_add_ps(acc, _mm256_mul_ps(w0, _mm256_loadu_ps(x0 + ch)));
    acc = _mm256_add_ps(acc, _mm256_mul_ps(w1, _mm256_loadu_ps(x1 + ch)));
    acc = _mm256_add_ps(acc, _mm256_mul_ps(w2, _mm256_loadu_ps(x2 + ch)));
    acc = _mm256_add_ps(acc, _mm256_mul_ps(w3, _mm256_loadu_ps(x3 + ch)));
    _mm256_storeu_ps(y + ch, acc);
  }
  conv_rows_tail(ch, c1, 4, win, w, y);
}

__attribute__((target("avx512f"))) void conv_rows4_avx512(int c0, int c1, int K, const float* const* win,
                                                          const float* w, float* y) {
  // v_a holds channels 4a..4a+3 (one per 128-bit lane, 4 taps each); after the in-lane 4x4 transpose
  // element 4L + a is channel 4a + L, which the permute puts back in order.
  const __m512i fix = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const float *x0 = win[0], *x1 = win[1], *x2 = win[2], *x3 = win[3];
  int ch = c0;
  for (; ch + 16 <= c1; ch += 16) {
    const float* wc = w + int64_t(ch) * 4;
    // The weights and the committed window come from DRAM (a whole step since they were last read);
    // u is the in-projection's fresh output. Prefetching kConvAhead channels ahead: ~1 us of ~11.
    for (int l = 0; l < 64; l += 16)
      _mm_prefetch(reinterpret_cast<const char*>(wc + 4 * kConvAhead + l), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(x0 + ch + kConvAhead), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(x1 + ch + kConvAhead), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(x2 + ch + kConvAhead), _MM_HINT_T0);
    const __m512 v0 = _mm512_loadu_ps(wc), v1 = _mm512_loadu_ps(wc + 16), v2 = _mm512_loadu_ps(wc + 32),
                 v3 = _mm512_loadu_ps(wc + 48);
    const __m512 t0 = _mm512_unpacklo_ps(v0, v1), t1 = _mm512_unpackhi_ps(v0, v1);
    const __m512 t2 = _mm512_unpacklo_ps(v2, v3), t3 = _mm512_unpackhi_ps(v2, v3);
    const __m512 w0 = _mm512_permutexvar_ps(fix, _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)));
    const __m512 w1 = _mm512_permutexvar_ps(fix, _mm512_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 w2 = _mm512_permutexvar_ps(fix, _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)));
    const __m512 w3 = _mm512_permutexvar_ps(fix, _mm512_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2)));
    __m512 acc = _mm512_setzero_ps();
    acc = _mm512_add_ps(acc, _mm512_mul_ps(w0, _mm512_loadu_ps(x0 + ch)));
    acc = _mm512_add_ps(acc, _mm512_mul_ps(w1, _mm512_loadu_ps(x1 + ch)));
    acc = _mm512_add_ps(acc, _mm512_mul_ps(w2, _mm512_loadu_ps(x2 + ch)));
    acc = _mm512_add_ps(acc, _mm512_mul_ps(w3, _mm512_loadu_ps(x3 + ch)));
    _mm512_storeu_ps(y + ch, acc);
  }
  conv_rows_tail(ch, c1, 4, win, w, y);
}

// n floats (a multiple of 16) to 64-byte aligned dst with streaming stores; the caller fences.
__attribute__((target("avx512f"))) void copy_streamed_avx512(float* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) _mm512_stream_ps(dst + i, _mm512_loadu_ps(src + i));
}
#endif

ConvRows conv_rows(int K) {
#if EYAS_X86
  if (K == 4 && use_avx512()) return &conv_rows4_avx512;
  if (K == 4 && use_avx2()) return &conv_rows4_avx2;
#endif
  return &conv_rows_base;
}

}  // namespace

void gdn_conv(int T, int C, int K, const float* u, const int32_t* parents, const float* conv_state, const float* w,
              float* y, ThreadPool& pool) {
  // Work units are (row, chunk of channels), so a decode step's single row splits across threads:
  // its silu's scalar exp made one thread take ~43 us per layer at 6,144 channels. silu is the gated
  // elementwise ops' (SIMD, the same bits on every level).
  const int64_t chunks = (C + kConvChunk - 1) / kConvChunk;
  const ConvRows rows = conv_rows(K);
  auto body = [&](int tid, int nth) {
    int64_t u0, u1;
    ThreadPool::split(int64_t(T) * chunks, tid, nth, 1, &u0, &u1);
    if (u0 >= u1) return;
    thread_local std::vector<const float*> win;  // kept per thread: no allocation per call
    if (win.size() < size_t(K)) win.resize(size_t(K));
    int64_t cur_row = -1;
    for (int64_t unit = u0; unit < u1; ++unit) {
      const int64_t r = unit / chunks;
      if (r != cur_row) {  // tap K-1 is the row itself, older taps follow the parents, then the committed window
        int cur = int(r), from_state = 0;
        for (int j = K - 1; j >= 0; --j) {
          if (cur >= 0) {
            win[j] = u + int64_t(cur) * C;
            cur = parents[cur];
          } else {
            win[j] = conv_state + int64_t(K - 2 - from_state++) * C;
          }
        }
        cur_row = r;
      }
      float* yr = y + r * C;
      const int c0 = int(unit % chunks) * kConvChunk, c1 = std::min(C, c0 + kConvChunk);
      rows(c0, c1, K, win.data(), w, yr);
      silu_inplace(yr + c0, c1 - c0);
    }
  };
  if (int64_t(T) * C < 1024)
    body(0, 1);
  else
    pool.run(body);
}

void gdn_conv_state(int C, int K, const float* conv_in, const float* u, const int32_t* nodes, int m, float* conv_out,
                    ThreadPool& pool) {
  // Row r of the new window is entry m + r of conv_in ++ u[nodes]; increasing r reads only entries
  // at or after the one it writes, so conv_out may alias conv_in (each thread copies all rows of its
  // own channels in that order). Split by the conv's chunks of channels: a decode step's copy then
  // runs beside the conv's reads of the same channels, on the same thread when the pool allows.
  const int64_t chunks = (C + kConvChunk - 1) / kConvChunk;
#if EYAS_X86
  // A decode step's window (m = 1) is next read a whole step later: streaming stores skip the read
  // of the lines a cached store first makes, and the cache they would fill.
  const bool streamed = m == 1 && use_avx512();
#endif
  auto body = [&](int tid, int nth) {
    int64_t q0, q1;
    ThreadPool::split(chunks, tid, nth, 1, &q0, &q1);
    if (q0 >= q1) return;
    const int64_t c0 = q0 * kConvChunk, c1 = std::min<int64_t>(C, q1 * kConvChunk);
    for (int r = 0; r < K - 1; ++r) {
      const int s = m + r;
      const float* src = s < K - 1 ? conv_in + int64_t(s) * C
                                   : u + int64_t(nodes ? nodes[s - (K - 1)] : s - (K - 1)) * C;
      float* dst = conv_out + int64_t(r) * C;
      if (src == dst) continue;
#if EYAS_X86
      if (streamed && reinterpret_cast<uintptr_t>(dst + c0) % 64 == 0 && (c1 - c0) % 16 == 0) {
        copy_streamed_avx512(dst + c0, src + c0, c1 - c0);
        continue;
      }
#endif
      std::memcpy(dst + c0, src + c0, size_t(c1 - c0) * sizeof(float));
    }
#if EYAS_X86
    if (streamed) _mm_sfence();
#endif
  };
  if (int64_t(K - 1) * C < 4096)
    body(0, 1);
  else
    pool.run(body);
}

void gdn_core(const ops::GdnDims& d, int m, const float* qkv, const float* a, const float* b, const float* A,
              const float* dt_bias, const int32_t* nodes, const int32_t* parents, const float* state_in,
              float* state_out, float* o, ThreadPool& pool) {
  const int hk = d.hk, dk = d.dk, hv = d.hv, dv = d.dv, ratio = hv / hk;
  const int64_t C = 2 * int64_t(hk) * dk + int64_t(hv) * dv, S = int64_t(dk) * dv;
  const float q_scale = 1.0f / std::sqrt(float(dk));
  const DeltaStep step = delta_step();
#if EYAS_X86
  // Several rows that form a chain, column blocks in L1 (delta_chain_avx512): every forward into state_out
  // (ops::gdn_core checks it is a chain), and a tree that is one (a verified chain of drafts), whose final
  // state nobody reads (commit replays the accepted rows), so it goes to per-thread scratch.
  bool chain = m > 1;
  for (int j = 0; j < m && chain; ++j) chain = parents[j] == j - 1;
  const bool blocked = chain && dv % kChainCols == 0 && use_avx512();
#else
  const bool blocked = false;
#endif
#if EYAS_X86
  // One decode row into its own output state: streaming stores (delta_step_streamed_avx512).
  const bool streamed = m == 1 && state_out && state_out != state_in && dv % 16 == 0 && use_avx512() &&
                        reinterpret_cast<uintptr_t>(state_out) % 64 == 0;
#endif
  auto body = [&](int tid, int nth) {
    int64_t h0, h1;
    ThreadPool::split(hv, tid, nth, 1, &h0, &h1);
    if (h0 >= h1) return;
    // A tree keeps every node's state (its children start from it); a chain runs in state_out. Kept per
    // thread (each node's state is written whole before it is read) instead of zeroing m x 64 KB per call.
    thread_local std::vector<float> states;
    if (!state_out && !blocked && states.size() < size_t(m) * S) states.resize(size_t(m) * S);
    thread_local std::vector<float> qn, kn, kv, delta;  // per-head scratch, kept per thread
    const size_t rows_kept = blocked ? size_t(m) : 1;      // the chain path keeps every row's q, k, alpha, beta
    if (qn.size() < rows_kept * dk) qn.resize(rows_kept * dk), kn.resize(rows_kept * dk);
    if (kv.size() < size_t(dv)) kv.resize(size_t(dv)), delta.resize(size_t(dv));
    thread_local std::vector<float> alphas, betas, blk;
    thread_local std::vector<const float*> vrows;
    thread_local std::vector<float*> orows;
    if (blocked && alphas.size() < size_t(m)) alphas.resize(size_t(m)), betas.resize(size_t(m)), vrows.resize(size_t(m)), orows.resize(size_t(m));
#if EYAS_X86
    if (blocked && blk.size() < size_t(dk) * kChainCols + 16) blk.resize(size_t(dk) * kChainCols + 16);
    float* blk64 = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(blk.data()) + 63) & ~uintptr_t(63));
    thread_local std::vector<float> discard;  // a tree chain's final state
    if (blocked && !state_out && discard.size() < size_t(S)) discard.resize(size_t(S));
#endif
    for (int64_t h = h0; h < h1; ++h) {
      const int64_t kh = d.tiled ? h % hk : h / ratio;
      const float* in = state_in + h * S;
      for (int j = 0; j < m; ++j) {
        const int64_t r = nodes ? nodes[j] : j;
        const float* row = qkv + r * C;
        const float* q = row + kh * dk;
        const float* k = row + int64_t(hk) * dk + kh * dk;
        const float* v = row + 2 * int64_t(hk) * dk + h * dv;
        const float qs = 1.0f / std::sqrt(sum_sq(q, dk) + d.l2_eps);
        const float ks = 1.0f / std::sqrt(sum_sq(k, dk) + d.l2_eps);
        float* qj = qn.data() + (blocked ? int64_t(j) * dk : 0);
        float* kj = kn.data() + (blocked ? int64_t(j) * dk : 0);
        for (int i = 0; i < dk; ++i) qj[i] = (q[i] * qs) * q_scale, kj[i] = k[i] * ks;
        const float beta = 1.0f / (1.0f + std::exp(-b[r * hv + h]));
        const float alpha = std::exp(A[h] * softplus(a[r * hv + h] + dt_bias[h]));
        float* oj = o + int64_t(j) * hv * dv + h * dv;
        if (blocked) {
          alphas[j] = alpha, betas[j] = beta, vrows[j] = v, orows[j] = oj;
          continue;
        }
        const int p = parents[j];
        const float* src;
        float* dst;
        if (state_out) {
          src = j == 0 ? in : state_out + h * S;
          dst = state_out + h * S;
        } else {
          src = p < 0 ? in : states.data() + int64_t(p) * S;
          dst = states.data() + int64_t(j) * S;
        }
#if EYAS_X86
        if (streamed && src != dst) {
          delta_step_streamed_avx512(dk, dv, src, dst, kn.data(), v, qn.data(), alpha, beta, kv.data(), delta.data(),
                                     oj, h + 1 < h1 ? in + S : nullptr);
          continue;
        }
#endif
        step(dk, dv, src, dst, kn.data(), v, qn.data(), alpha, beta, kv.data(), delta.data(), oj);
      }
#if EYAS_X86
      if (blocked)
        delta_chain_avx512(dk, dv, m, in, state_out ? state_out + h * S : discard.data(), kn.data(), qn.data(),
                           alphas.data(), betas.data(), vrows.data(), orows.data(), blk64);
#endif
    }
#if EYAS_X86
    if (streamed) _mm_sfence();  // this thread's streamed rows land before the pool reports the job done
#endif
  };
  if (int64_t(m) * hv * S < 16384)
    body(0, 1);
  else
    pool.run(body);
}

}  // namespace eyas::cpu
