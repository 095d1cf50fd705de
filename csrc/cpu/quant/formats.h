// GGUF block layouts of the weight types the matmul and embedding kernels read, plus the exact
// scalar conversions they share. Everything here is plain C++ so any ISA-specific TU may inline it.
#pragma once
#include <cstdint>
#include <cstring>

#include "core/dtype.h"

namespace eyas::cpu::quant {

// Weight kinds the kernels handle, dense index for kernel tables.
enum WKind : int { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ4_K, kQ5_K, kQ6_K, kNumKinds };

// The kind of a GGML type id (eyas::DType); kNumKinds for a type no kernel reads.
constexpr WKind kind_of_dtype(int32_t wtype) {
  switch (DType(wtype)) {
    case DType::F32: return kF32;
    case DType::F16: return kF16;
    case DType::BF16: return kBF16;
    case DType::Q8_0: return kQ8_0;
    case DType::Q4_0: return kQ4_0;
    case DType::Q4_1: return kQ4_1;
    case DType::Q5_0: return kQ5_0;
    case DType::Q5_1: return kQ5_1;
    case DType::Q4_K: return kQ4_K;
    case DType::Q5_K: return kQ5_K;
    case DType::Q6_K: return kQ6_K;
    default: return kNumKinds;
  }
}

// Bytes per block (32 elements for the legacy types, 256 for K-quants), from core/dtype.h's table.
constexpr int kQ8_0Bytes = block_bytes_of(DType::Q8_0);  // f16 d, int8 qs[32]
constexpr int kQ4_0Bytes = block_bytes_of(DType::Q4_0);  // f16 d, u8 qs[16] (lo nibbles: 0..15, hi nibbles: 16..31)
constexpr int kQ4_1Bytes = block_bytes_of(DType::Q4_1);  // f16 d, f16 m, u8 qs[16]
constexpr int kQ5_0Bytes = block_bytes_of(DType::Q5_0);  // f16 d, u8 qh[4] (bit j = high bit of element j), u8 qs[16]
constexpr int kQ5_1Bytes = block_bytes_of(DType::Q5_1);  // f16 d, f16 m, u8 qh[4], u8 qs[16]
constexpr int kQ4_KBytes = block_bytes_of(DType::Q4_K);  // f16 d, f16 dmin, u8 scales[12], u8 qs[128]
constexpr int kQ5_KBytes = block_bytes_of(DType::Q5_K);  // f16 d, f16 dmin, u8 scales[12], u8 qh[32], u8 qs[128]
constexpr int kQ6_KBytes = block_bytes_of(DType::Q6_K);  // u8 ql[128], u8 qh[64], int8 scales[16], f16 d
// Bytes per element of the float kinds (F32, F16, BF16).
constexpr int kFloatElemBytes[3] = {block_bytes_of(DType::F32), block_bytes_of(DType::F16), block_bytes_of(DType::BF16)};

inline uint16_t rd16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t rd32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// IEEE half -> float, exact (every half is representable), identical to F16C's vcvtph2ps.
inline float h2f(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf / nan (payload kept, quiet bit as F16C)
    if (man) bits |= 0x00400000u;
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal half: normalize
    int e = -1;
    do {
      man <<= 1;
      ++e;
    } while (!(man & 0x400u));
    bits = sign | uint32_t(112 - e) << 23 | ((man & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// float -> IEEE half, rounded to nearest even (overflow to inf, NaN stays a quiet NaN), identical
// to F16C's vcvtps2ph with round-to-nearest and to numpy's astype(float16).
inline uint16_t f2h(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
  if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520 rounds to inf
  uint32_t h, rem, half;
  if (ax >= 0x38800000u) {  // normal half: drop 13 mantissa bits
    h = (((ax >> 23) - 112) << 10) | ((ax >> 13) & 0x3ffu);
    rem = ax & 0x1fffu, half = 0x1000u;
  } else {  // subnormal half (or zero): the value in units of 2^-24
    if (ax < 0x33000000u) return uint16_t(sign);  // below 2^-25: rounds to zero
    const uint32_t m = (ax & 0x7fffffu) | 0x800000u, shift = 126 - (ax >> 23);
    h = m >> shift;
    rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  }
  if (rem > half || (rem == half && (h & 1u))) ++h;  // a carry moves into the exponent correctly
  return uint16_t(sign | h);
}

inline float bf2f(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Q4_K / Q5_K: 8 six-bit scales and mins packed in 12 bytes (ggml's get_scale_min_k4).
inline void kquant_scales(const uint8_t* q, uint8_t* sc, uint8_t* m) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = q[j] & 63;
    m[j] = q[j + 4] & 63;
  }
  for (int j = 4; j < 8; ++j) {
    sc[j] = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m[j] = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// The same 16 values as kquant_scales, four bytes per word (sc0..3, sc4..7, m0..3, m4..7), with
// word operations only (the SIMD kernels' form).
inline void kquant_scales_words(const uint8_t* q, uint32_t out[4]) {
  const uint32_t u0 = rd32(q), u1 = rd32(q + 4), u2 = rd32(q + 8), m6 = 0x3f3f3f3fu, m4 = 0x0f0f0f0fu, m2 = 0x03030303u;
  out[0] = u0 & m6;
  out[1] = (u2 & m4) | (((u0 >> 6) & m2) << 4);
  out[2] = u1 & m6;
  out[3] = ((u2 >> 4) & m4) | (((u1 >> 6) & m2) << 4);
}

}  // namespace eyas::cpu::quant
