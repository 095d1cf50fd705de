// exp() shared by softmax, attention and the gated elementwise ops. The scalar and AVX-512 versions
// run the same IEEE operations in the same order (Cephes-style range reduction + degree-5 polynomial),
// so a value's bits never depend on which path or lane computed it. Also: the run-time SIMD switch.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#define EYAS_X86 1
// GCC 12 flags _mm512_undefined_* inside its own intrinsics as uninitialized; a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#else
#define EYAS_X86 0
#endif

namespace eyas::cpu {

// True when the AVX-512 (AVX2 + FMA + F16C) kernels may run: CPU support and not capped for testing.
bool use_avx512();
bool use_avx2();
// Testing knobs: cap the kernels in this family (rope, elementwise, softmax, top-k, attention, the
// F16 KV write) at a SIMD level (0 scalar, 1 AVX2, 2 AVX-512), to prove every path gives the same
// bits; force_scalar(on) is cap 0 or no cap.
void cap_simd(int level);
void force_scalar(bool on);

namespace expc {
constexpr float kHi = 88.0f;                  // exp(88) < FLT_MAX and 2^n stays a normal float
constexpr float kLo = -87.33654475f;          // ln(2^-126): below it the result flushes to 0
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;        // ln 2 split so n * kLn2Hi is exact
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f;
constexpr float kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
}  // namespace expc

inline float exp_scalar(float x) {
  using namespace expc;
  if (x != x) return x;
  if (x > kHi) return std::numeric_limits<float>::infinity();
  if (x < kLo) return 0.0f;
  const float n = std::nearbyint(x * kLog2e);
  float r = std::fma(n, -kLn2Hi, x);
  r = std::fma(n, -kLn2Lo, r);
  float p = kP0;
  p = std::fma(p, r, kP1);
  p = std::fma(p, r, kP2);
  p = std::fma(p, r, kP3);
  p = std::fma(p, r, kP4);
  p = std::fma(p, r, kP5);
  const float r2 = r * r;
  float e = std::fma(p, r2, r);
  e = e + 1.0f;
  const int32_t bits = (int32_t(n) + 127) << 23;
  float two_n;
  std::memcpy(&two_n, &bits, 4);
  return e * two_n;
}

#if EYAS_X86
// exp_scalar's operations for x in [kLo, kHi] (no lane clamped or replaced).
__attribute__((target("avx512f"), always_inline)) inline __m512 exp_avx512_in_range(__m512 x) {
  using namespace expc;
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kP0);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP5));
  const __m512 r2 = _mm512_mul_ps(r, r);
  __m512 e = _mm512_fmadd_ps(p, r2, r);
  e = _mm512_add_ps(e, _mm512_set1_ps(1.0f));
  const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(e, _mm512_castsi512_ps(bits));
}

__attribute__((target("avx512f"))) inline __m512 exp_avx512(__m512 x) {
  using namespace expc;
  // Every lane in range (NaN fails both ordered tests): the clamps and replacements below change nothing.
  const __mmask16 in_range =
      _mm512_cmp_ps_mask(x, _mm512_set1_ps(kLo), _CMP_GE_OQ) & _mm512_cmp_ps_mask(x, _mm512_set1_ps(kHi), _CMP_LE_OQ);
  if (in_range == 0xFFFF) return exp_avx512_in_range(x);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __mmask16 big = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kHi), _CMP_GT_OQ);
  const __mmask16 small = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kLo), _CMP_LT_OQ);
  // Out-of-range lanes are clamped only to keep the exponent arithmetic sane; they are replaced below.
  const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kLo)), _mm512_set1_ps(kHi));
  __m512 y = exp_avx512_in_range(xc);
  y = _mm512_mask_blend_ps(big, y, _mm512_set1_ps(std::numeric_limits<float>::infinity()));
  y = _mm512_mask_blend_ps(small, y, _mm512_setzero_ps());
  return _mm512_mask_blend_ps(nan, y, x);
}

// Sum of 16 lanes folded as lanes[l] += lanes[l + s] for s = 8, 4, 2, 1 (the scalar fold_16 order).
__attribute__((target("avx512f"))) inline float fold16_avx512(__m512 v) {
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4E));
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0xB1));
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0x4E));
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));
  return _mm512_cvtss_f32(v);
}

__attribute__((target("avx512f"))) inline __mmask16 tail_mask(int n) {
  return __mmask16(n >= 16 ? 0xFFFF : (1u << n) - 1u);
}
// exp_scalar's operations on 8 lanes (AVX2 + FMA).
__attribute__((target("avx2,fma"))) inline __m256 exp_avx2(__m256 x) {
  using namespace expc;
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 big = _mm256_cmp_ps(x, _mm256_set1_ps(kHi), _CMP_GT_OQ);
  const __m256 small = _mm256_cmp_ps(x, _mm256_set1_ps(kLo), _CMP_LT_OQ);
  // Out-of-range lanes are clamped only to keep the exponent arithmetic sane; they are replaced below.
  const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kLo)), _mm256_set1_ps(kHi));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kP0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
  const __m256 r2 = _mm256_mul_ps(r, r);
  __m256 e = _mm256_fmadd_ps(p, r2, r);
  e = _mm256_add_ps(e, _mm256_set1_ps(1.0f));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 y = _mm256_mul_ps(e, _mm256_castsi256_ps(bits));
  y = _mm256_blendv_ps(y, _mm256_set1_ps(std::numeric_limits<float>::infinity()), big);
  y = _mm256_blendv_ps(y, _mm256_setzero_ps(), small);
  return _mm256_blendv_ps(y, x, nan);
}

// fold16 of lanes 0..7 in lo and 8..15 in hi (lanes[l] += lanes[l + s] for s = 8, 4, 2, 1).
__attribute__((target("avx2"))) inline float fold16_avx2(__m256 lo, __m256 hi) {
  const __m256 v = _mm256_add_ps(lo, hi);
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_shuffle_ps(x, x, 1));
  return _mm_cvtss_f32(x);
}

// The largest of 8 lanes (max is exact in any order; NaN lanes must have been masked by the caller).
__attribute__((target("avx2"))) inline float hmax8_avx2(__m256 v) {
  __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  x = _mm_max_ss(x, _mm_shuffle_ps(x, x, 1));
  return _mm_cvtss_f32(x);
}

// Lanes [0, n) of a load or store of 8 floats (n < 8: a masked tail).
__attribute__((target("avx2"))) inline __m256i tail_mask8(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif

// The scalar twin of fold16_avx512.
inline float fold16_scalar(float* lanes) {
  for (int s = 8; s >= 1; s /= 2)
    for (int l = 0; l < s; ++l) lanes[l] += lanes[l + s];
  return lanes[0];
}

}  // namespace eyas::cpu
