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

// True when the AVX-512 kernels may run (CPU support and not forced off for testing).
bool use_avx512();
// Testing knob: force the scalar paths of the kernels in this family (rope, elementwise, softmax,
// top-k, attention, the F16 KV write), to prove they give the same bits as the SIMD paths.
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
__attribute__((target("avx512f"))) inline __m512 exp_avx512(__m512 x) {
  using namespace expc;
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __mmask16 big = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kHi), _CMP_GT_OQ);
  const __mmask16 small = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kLo), _CMP_LT_OQ);
  // Out-of-range lanes are clamped only to keep the exponent arithmetic sane; they are replaced below.
  const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kLo)), _mm512_set1_ps(kHi));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), xc);
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
  __m512 y = _mm512_mul_ps(e, _mm512_castsi512_ps(bits));
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
#endif

// The scalar twin of fold16_avx512.
inline float fold16_scalar(float* lanes) {
  for (int s = 8; s >= 1; s /= 2)
    for (int l = 0; l < s; ++l) lanes[l] += lanes[l + s];
  return lanes[0];
}

}  // namespace eyas::cpu
