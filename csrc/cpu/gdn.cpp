// Gated DeltaNet kernels: the token-sequential delta rule (no chunked WY form, whose rounding
// would differ between prefill, decode and trees) with fixed-order sums.
#include "cpu/gdn.h"

#include <algorithm>
#include <cmath>
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
// 64-byte aligned rows.
__attribute__((target("avx512f"))) void delta_step_streamed_avx512(int dk, int dv, const float* src, float* dst,
                                                                   const float* k, const float* v, const float* q,
                                                                   float alpha, float beta, float* kv, float* delta,
                                                                   float* o) {
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
    for (int j = 0; j < dv; j += 16) {
      const __m512 sv = _mm512_add_ps(_mm512_mul_ps(av, _mm512_loadu_ps(s + j)), _mm512_mul_ps(ki, _mm512_loadu_ps(delta + j)));
      _mm512_stream_ps(t + j, sv);
      _mm512_storeu_ps(o + j, _mm512_add_ps(_mm512_loadu_ps(o + j), _mm512_mul_ps(sv, qi)));
    }
  }
}

// The widest copy the SIMD switch allows (capped in tests, which compare every level's bits).
DeltaStep delta_step() {
#if EYAS_X86
  if (use_avx512()) return &delta_step_avx512;
  if (use_avx2()) return &delta_step_avx2;
#endif
  return &delta_step_base;
}

}  // namespace

void gdn_conv(int T, int C, int K, const float* u, const int32_t* parents, const float* conv_state, const float* w,
              float* y, ThreadPool& pool) {
  // Work units are (row, chunk of channels), so a decode step's single row splits across threads:
  // its silu's scalar exp made one thread take ~43 us per layer at 6,144 channels. silu is the gated
  // elementwise ops' (SIMD, the same bits on every level).
  constexpr int kChunk = 512;
  const int64_t chunks = (C + kChunk - 1) / kChunk;
  auto body = [&](int tid, int nth) {
    int64_t u0, u1;
    ThreadPool::split(int64_t(T) * chunks, tid, nth, 1, &u0, &u1);
    std::vector<const float*> win(static_cast<size_t>(K));
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
      const int c0 = int(unit % chunks) * kChunk, c1 = std::min(C, c0 + kChunk);
      for (int ch = c0; ch < c1; ++ch) {
        const float* wc = w + int64_t(ch) * K;
        float acc = 0.0f;
        for (int j = 0; j < K; ++j) acc += wc[j] * win[j][ch];
        yr[ch] = acc;
      }
      silu_inplace(yr + c0, c1 - c0);
    }
  };
  if (int64_t(T) * C < 1024)
    body(0, 1);
  else
    pool.run(body);
}

void gdn_conv_state(int C, int K, const float* conv_in, const float* u, const int32_t* nodes, int m, float* conv_out) {
  // Row r of the new window is entry m + r of conv_in ++ u[nodes]; increasing r reads only entries
  // at or after the one it writes, so conv_out may alias conv_in.
  for (int r = 0; r < K - 1; ++r) {
    const int s = m + r;
    const float* src = s < K - 1 ? conv_in + int64_t(s) * C
                                 : u + int64_t(nodes ? nodes[s - (K - 1)] : s - (K - 1)) * C;
    float* dst = conv_out + int64_t(r) * C;
    if (src != dst)
      for (int ch = 0; ch < C; ++ch) dst[ch] = src[ch];
  }
}

void gdn_core(const ops::GdnDims& d, int m, const float* qkv, const float* a, const float* b, const float* A,
              const float* dt_bias, const int32_t* nodes, const int32_t* parents, const float* state_in,
              float* state_out, float* o, ThreadPool& pool) {
  const int hk = d.hk, dk = d.dk, hv = d.hv, dv = d.dv, ratio = hv / hk;
  const int64_t C = 2 * int64_t(hk) * dk + int64_t(hv) * dv, S = int64_t(dk) * dv;
  const float q_scale = 1.0f / std::sqrt(float(dk));
  const DeltaStep step = delta_step();
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
    if (!state_out && states.size() < size_t(m) * S) states.resize(size_t(m) * S);
    std::vector<float> qn(static_cast<size_t>(dk)), kn(qn), kv(static_cast<size_t>(dv)), delta(kv);
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
        for (int i = 0; i < dk; ++i) qn[i] = (q[i] * qs) * q_scale, kn[i] = k[i] * ks;
        const float beta = 1.0f / (1.0f + std::exp(-b[r * hv + h]));
        const float alpha = std::exp(A[h] * softplus(a[r * hv + h] + dt_bias[h]));
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
        DeltaStep run = step;
#if EYAS_X86
        if (streamed && src != dst) run = &delta_step_streamed_avx512;
#endif
        run(dk, dv, src, dst, kn.data(), v, qn.data(), alpha, beta, kv.data(), delta.data(),
            o + int64_t(j) * hv * dv + h * dv);
      }
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
