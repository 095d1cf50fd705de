// Host-side weight rows for the draft head's coarse copy and rescoring (csrc/speculative/drafter.cpp):
// a row dequantized from any stored type, a row quantized to Q4_0. Called at load and between steps.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/embedding.h"
#include "cpu/quant/formats.h"
#include "cpu/softmax_exp.h"
#include "ops/host_rows.h"

namespace eyas::ops {

void dequantize_row_host(int32_t wtype, const uint8_t* row, int64_t k, float* y) {
  cpu::dequantize_row(wtype, row, k, y);
}

namespace {

float dot16_scalar(const float* w, const float* x, int64_t k) {
  float lanes[16] = {};
  for (int64_t i = 0; i < k; ++i) lanes[i & 15] = std::fma(w[i], x[i], lanes[i & 15]);
  return cpu::fold16_scalar(lanes);
}

#if EYAS_X86
__attribute__((target("avx512f"))) float dot16_avx512(const float* w, const float* x, int64_t k) {
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), acc);
  if (i < k) {  // the tail's lanes 0 .. k - i - 1, the others unchanged
    const __mmask16 m = cpu::tail_mask(int(k - i));
    acc = _mm512_mask3_fmadd_ps(_mm512_maskz_loadu_ps(m, w + i), _mm512_maskz_loadu_ps(m, x + i), acc, m);
  }
  return cpu::fold16_avx512(acc);
}

__attribute__((target("avx2,fma"))) float dot16_avx2(const float* w, const float* x, int64_t k) {
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    lo = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), lo);
    hi = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), hi);
  }
  if (i == k) return cpu::fold16_avx2(lo, hi);
  float lanes[16];
  _mm256_storeu_ps(lanes, lo), _mm256_storeu_ps(lanes + 8, hi);
  for (; i < k; ++i) lanes[i & 15] = std::fma(w[i], x[i], lanes[i & 15]);
  return cpu::fold16_scalar(lanes);
}
#endif

}  // namespace

float dot16_row_host(const float* w, const float* x, int64_t k) {
#if EYAS_X86
  if (cpu::use_avx512()) return dot16_avx512(w, x, k);
  if (cpu::use_avx2()) return dot16_avx2(w, x, k);
#endif
  return dot16_scalar(w, x, k);
}

void prefetch_host(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(c + off);
}

void quantize_row_q4_0_host(const float* x, int64_t k, uint8_t* out) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32, out += cpu::quant::kQ4_0Bytes) {
    // The first element of largest magnitude maps to -8, so its sign decides the scale's (GGUF's choice;
    // in an all-zero block that is x[0]'s sign, which the scale's zero keeps).
    float amax = std::fabs(x[0]), extreme = x[0];
    for (int j = 1; j < 32; ++j)
      if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), extreme = x[j];
    const float d = extreme / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = cpu::quant::f2h(d);
    out[0] = uint8_t(dh & 0xff), out[1] = uint8_t(dh >> 8);
    for (int j = 0; j < 16; ++j) {
      const int lo = std::clamp(int(x[j] * id + 8.5f), 0, 15), hi = std::clamp(int(x[j + 16] * id + 8.5f), 0, 15);
      out[2 + j] = uint8_t(lo | (hi << 4));
    }
  }
}

Tensor requantize_q4_0_host(const char* op, const Tensor& w) {
  check_ndim(op, "w", w, 2);
  const int64_t N = w.dim(0), K = w.dim(1);
  if (K % 32) fail(op, "rows must be a multiple of 32 elements (Q4_0 blocks), got " + w.describe());
  Tensor out = Tensor::empty(DType::Q4_0, {N, K});
  std::vector<float> row(static_cast<size_t>(K));
  for (int64_t r = 0; r < N; ++r) {
    dequantize_row_host(int32_t(w.dtype), w.row_ptr(r), K, row.data());
    quantize_row_q4_0_host(row.data(), K, const_cast<uint8_t*>(out.row_ptr(r)));
  }
  return out;
}

}  // namespace eyas::ops
