// metal:: math over scalars and vectors. Half/bfloat math computes in float and rounds back,
// as Metal's precise functions are specified to within their ULP bounds.
#pragma once
#include "msl_types.h"

namespace msl {
template <class T, class F>
inline T vmap(T x, F f) {
  if constexpr (vt<T>::n == 1) {
    return T(f(x));
  } else {
    T r;
    for (int i = 0; i < vt<T>::n; ++i) r[i] = f(x[i]);
    return r;
  }
}
template <class T, class U, class F>
inline T vmap2(T a, U b, F f) {
  if constexpr (vt<T>::n == 1) {
    return T(f(a, b));
  } else {
    T r;
    for (int i = 0; i < vt<T>::n; ++i) {
      if constexpr (vt<U>::n == 1) r[i] = f(a[i], b);
      else r[i] = f(a[i], b[i]);
    }
    return r;
  }
}
template <class E>
constexpr bool is_fp = std::is_floating_point_v<E> || std::is_same_v<E, half> || std::is_same_v<E, bfloat>;
}  // namespace msl

namespace metal {

#define MSL_UNARY(name, expr)                                             \
  template <class T>                                                      \
  inline T name(T x) {                                                    \
    return ::msl::vmap(x, [](auto v) {                                    \
      using E = decltype(v);                                              \
      float f = float(v);                                                 \
      (void)f;                                                            \
      return E(expr);                                                     \
    });                                                                   \
  }
MSL_UNARY(exp, std::exp(f))
MSL_UNARY(exp2, std::exp2(f))
MSL_UNARY(exp10, std::pow(10.0f, f))
MSL_UNARY(log, std::log(f))
MSL_UNARY(log2, std::log2(f))
MSL_UNARY(log10, std::log10(f))
MSL_UNARY(sqrt, std::sqrt(f))
MSL_UNARY(rsqrt, 1.0f / std::sqrt(f))
MSL_UNARY(tanh, std::tanh(f))
MSL_UNARY(sin, std::sin(f))
MSL_UNARY(cos, std::cos(f))
MSL_UNARY(floor, std::floor(f))
MSL_UNARY(ceil, std::ceil(f))
MSL_UNARY(trunc, std::trunc(f))
MSL_UNARY(round, std::round(f))
MSL_UNARY(rint, std::rint(f))
MSL_UNARY(fract, f - std::floor(f))
MSL_UNARY(fabs, std::fabs(f))
#undef MSL_UNARY

template <class T>
inline T abs(T x) {
  return ::msl::vmap(x, [](auto v) {
    using E = decltype(v);
    if constexpr (::msl::is_fp<E>) return E(std::fabs(float(v)));
    else return E(v < 0 ? -v : v);
  });
}

// max/min follow fmax/fmin for floating point (a NaN operand loses), as MSL specifies.
template <class T, class U>
inline T max(T a, U b) {
  return ::msl::vmap2(a, b, [](auto x, auto y) {
    using E = decltype(x);
    if constexpr (::msl::is_fp<E>) return E(std::fmax(float(x), float(y)));
    else return E(x > E(y) ? x : E(y));
  });
}
template <class T, class U>
inline T min(T a, U b) {
  return ::msl::vmap2(a, b, [](auto x, auto y) {
    using E = decltype(x);
    if constexpr (::msl::is_fp<E>) return E(std::fmin(float(x), float(y)));
    else return E(x < E(y) ? x : E(y));
  });
}
template <class T, class U>
inline T fmax(T a, U b) { return max(a, b); }
template <class T, class U>
inline T fmin(T a, U b) { return min(a, b); }
template <class T, class U, class V>
inline T clamp(T x, U lo, V hi) { return min(max(x, lo), hi); }
template <class T, class U>
inline T pow(T a, U b) {
  return ::msl::vmap2(a, b, [](auto x, auto y) { return decltype(x)(std::pow(float(x), float(y))); });
}
template <class T, class U>
inline T powr(T a, U b) { return pow(a, b); }
template <class T, class U>
inline T fmod(T a, U b) {
  return ::msl::vmap2(a, b, [](auto x, auto y) { return decltype(x)(std::fmod(float(x), float(y))); });
}
template <class T, class U>
inline T copysign(T a, U b) {
  return ::msl::vmap2(a, b, [](auto x, auto y) { return decltype(x)(std::copysign(float(x), float(y))); });
}
template <class T>
inline T fma(T a, T b, T c) {
  if constexpr (::msl::vt<T>::n == 1) {
    return T(std::fma(float(a), float(b), float(c)));
  } else {
    T r;
    for (int i = 0; i < ::msl::vt<T>::n; ++i) r[i] = std::fma(float(a[i]), float(b[i]), float(c[i]));
    return r;
  }
}
template <class T, class U>
inline T mix(T a, T b, U t) { return a + (b - a) * t; }
template <class T>
inline T sign(T x) {
  return ::msl::vmap(x, [](auto v) {
    using E = decltype(v);
    return v > E(0) ? E(1) : (v < E(0) ? E(-1) : E(0));
  });
}
// select(a, b, c): c ? b : a, per component (c is a bool or a comparison mask).
template <class T, class C>
inline T select(T a, T b, C c) {
  if constexpr (::msl::vt<T>::n == 1) {
    return c ? b : a;
  } else {
    T r;
    for (int i = 0; i < ::msl::vt<T>::n; ++i) {
      if constexpr (::msl::vt<C>::n == 1) r[i] = c ? b[i] : a[i];
      else r[i] = c[i] ? b[i] : a[i];
    }
    return r;
  }
}
// Dot products accumulate in component order.
template <class T>
inline typename ::msl::vt<T>::elem dot(T a, T b) {
  using E = typename ::msl::vt<T>::elem;
  E s = E(0);
  for (int i = 0; i < ::msl::vt<T>::n; ++i) s = s + a[i] * b[i];
  return s;
}
template <class T>
inline bool all(T m) {
  if constexpr (::msl::vt<T>::n == 1) return bool(m);
  else {
    for (int i = 0; i < ::msl::vt<T>::n; ++i) if (!m[i]) return false;
    return true;
  }
}
template <class T>
inline bool any(T m) {
  if constexpr (::msl::vt<T>::n == 1) return bool(m);
  else {
    for (int i = 0; i < ::msl::vt<T>::n; ++i) if (m[i]) return true;
    return false;
  }
}
template <class T>
inline bool isnan(T x) { return std::isnan(float(x)); }
template <class T>
inline bool isinf(T x) { return std::isinf(float(x)); }
template <class T>
inline bool isfinite(T x) { return std::isfinite(float(x)); }
template <class T>
inline T popcount(T x) { return T(__builtin_popcountll((unsigned long long)x)); }

namespace fast {
using metal::cos; using metal::exp; using metal::exp2; using metal::log; using metal::log2;
using metal::max; using metal::min; using metal::pow; using metal::rsqrt; using metal::sin;
using metal::sqrt; using metal::tanh;
}  // namespace fast
namespace precise {
using metal::cos; using metal::exp; using metal::exp2; using metal::log; using metal::log2;
using metal::max; using metal::min; using metal::pow; using metal::rsqrt; using metal::sin;
using metal::sqrt; using metal::tanh;
}  // namespace precise

}  // namespace metal
