// MSL scalar and vector types as clang ext-vectors (swizzles, operators and codegen come for
// free; Metal's front end is clang-derived with the same semantics). Constructors such as
// float4(a, b.xy, 1) are function-like macros named after the type, so `float4 x;` still names
// the type while `float4(...)` becomes a value-converting builder.
#pragma once
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "msl_rt.h"

typedef _Float16 half;
typedef __bf16 bfloat;
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;

#define MSL_VEC3(T, name)                                    \
  typedef T name##2 __attribute__((ext_vector_type(2)));     \
  typedef T name##3 __attribute__((ext_vector_type(3)));     \
  typedef T name##4 __attribute__((ext_vector_type(4)));
MSL_VEC3(float, float)
MSL_VEC3(half, half)
MSL_VEC3(bfloat, bfloat)
MSL_VEC3(int, int)
MSL_VEC3(uint, uint)
MSL_VEC3(short, short)
MSL_VEC3(ushort, ushort)
MSL_VEC3(signed char, char)
MSL_VEC3(uchar, uchar)
MSL_VEC3(long, long)
MSL_VEC3(ulong, ulong)
#undef MSL_VEC3

namespace msl {

template <class E, class A>
inline void vpush(E* buf, int& k, const A& a) {
  if constexpr (vt<A>::n == 1) {
    buf[k++] = static_cast<E>(a);
  } else {
    for (int i = 0; i < vt<A>::n; ++i) buf[k++] = static_cast<E>(a[i]);
  }
}

// MSL vector constructor: splat from one scalar, element-wise value conversion from one
// vector, or concatenation of scalars and vectors whose components add up to N.
template <class V, class... A>
inline V vmake(const A&... a) {
  using E = typename vt<V>::elem;
  constexpr int N = vt<V>::n;
  constexpr int total = (0 + ... + vt<A>::n);
  static_assert(sizeof...(A) == 0 || total == N || (sizeof...(A) == 1 && total == 1),
                "msl shim: vector constructor needs 0, 1 or exactly N components");
  V r;
  if constexpr (sizeof...(A) == 0) {
    for (int i = 0; i < N; ++i) r[i] = E(0);
  } else {
    E buf[N > total ? N : total];
    int k = 0;
    (vpush(buf, k, a), ...);
    for (int i = 0; i < N; ++i) r[i] = total == 1 ? buf[0] : buf[i];
  }
  return r;
}

}  // namespace msl

#define float2(...) ::msl::vmake<::float2>(__VA_ARGS__)
#define float3(...) ::msl::vmake<::float3>(__VA_ARGS__)
#define float4(...) ::msl::vmake<::float4>(__VA_ARGS__)
#define half2(...) ::msl::vmake<::half2>(__VA_ARGS__)
#define half3(...) ::msl::vmake<::half3>(__VA_ARGS__)
#define half4(...) ::msl::vmake<::half4>(__VA_ARGS__)
#define bfloat2(...) ::msl::vmake<::bfloat2>(__VA_ARGS__)
#define bfloat3(...) ::msl::vmake<::bfloat3>(__VA_ARGS__)
#define bfloat4(...) ::msl::vmake<::bfloat4>(__VA_ARGS__)
#define int2(...) ::msl::vmake<::int2>(__VA_ARGS__)
#define int3(...) ::msl::vmake<::int3>(__VA_ARGS__)
#define int4(...) ::msl::vmake<::int4>(__VA_ARGS__)
#define uint2(...) ::msl::vmake<::uint2>(__VA_ARGS__)
#define uint3(...) ::msl::vmake<::uint3>(__VA_ARGS__)
#define uint4(...) ::msl::vmake<::uint4>(__VA_ARGS__)
#define short2(...) ::msl::vmake<::short2>(__VA_ARGS__)
#define short3(...) ::msl::vmake<::short3>(__VA_ARGS__)
#define short4(...) ::msl::vmake<::short4>(__VA_ARGS__)
#define ushort2(...) ::msl::vmake<::ushort2>(__VA_ARGS__)
#define ushort3(...) ::msl::vmake<::ushort3>(__VA_ARGS__)
#define ushort4(...) ::msl::vmake<::ushort4>(__VA_ARGS__)
#define char2(...) ::msl::vmake<::char2>(__VA_ARGS__)
#define char3(...) ::msl::vmake<::char3>(__VA_ARGS__)
#define char4(...) ::msl::vmake<::char4>(__VA_ARGS__)
#define uchar2(...) ::msl::vmake<::uchar2>(__VA_ARGS__)
#define uchar3(...) ::msl::vmake<::uchar3>(__VA_ARGS__)
#define uchar4(...) ::msl::vmake<::uchar4>(__VA_ARGS__)

namespace metal {

// Reinterpret the bits (MSL as_type); sizes must match as in MSL.
template <class T, class U>
inline T as_type(const U& u) {
  static_assert(sizeof(T) == sizeof(U), "as_type: sizes differ");
  return __builtin_bit_cast(T, u);
}

template <class T>
using numeric_limits = std::numeric_limits<T>;

}  // namespace metal

#ifndef HALF_MAX
#define HALF_MAX 65504.0f
#endif
#ifndef M_PI_F
#define M_PI_F 3.14159265358979323846f
#endif

// Debian 12's libgcc lacks the float -> bf16 helper clang calls; round to nearest even.
extern "C" __attribute__((weak)) inline __bf16 __truncsfbf2(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) u |= 0x00400000u;  // keep NaN quiet
  else u += 0x7fffu + ((u >> 16) & 1u);
  uint16_t h = uint16_t(u >> 16);
  __bf16 r;
  std::memcpy(&r, &h, 2);
  return r;
}
