// Barriers and simdgroup collectives. Each takes the caller's file/line as hidden default
// arguments, so the executor can tell whether every thread reached the *same* call site.
#pragma once
#include "msl_types.h"

namespace metal {

enum class mem_flags : uint { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
inline mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(uint(a) | uint(b)); }

// All threads of the group wait here; every barrier is a full fence in the emulator.
inline void threadgroup_barrier(mem_flags, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::msl::rt::barrier(file, line);
}
inline void simdgroup_barrier(mem_flags, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::msl::rt::collect<int>(::msl::rt::Coll::barrier, 0, 0, file, line);
}

#define MSL_COLL1(name, op)                                                                \
  template <class T>                                                                       \
  inline T name(T x, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {  \
    return ::msl::rt::collect<T>(::msl::rt::Coll::op, x, 0, file, line);                   \
  }
#define MSL_COLL2(name, op)                                                                        \
  template <class T>                                                                               \
  inline T name(T x, ushort a, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {  \
    return ::msl::rt::collect<T>(::msl::rt::Coll::op, x, a, file, line);                           \
  }
MSL_COLL1(simd_sum, sum)
MSL_COLL1(simd_product, product)
MSL_COLL1(simd_max, max)
MSL_COLL1(simd_min, min)
MSL_COLL1(simd_and, and_)
MSL_COLL1(simd_or, or_)
MSL_COLL1(simd_xor, xor_)
MSL_COLL1(simd_prefix_inclusive_sum, prefix_incl)
MSL_COLL1(simd_prefix_exclusive_sum, prefix_excl)
MSL_COLL1(simd_broadcast_first, broadcast_first)
MSL_COLL2(simd_shuffle, shuffle)
MSL_COLL2(simd_shuffle_down, shuffle_down)
MSL_COLL2(simd_shuffle_up, shuffle_up)
MSL_COLL2(simd_shuffle_xor, shuffle_xor)
MSL_COLL2(simd_broadcast, broadcast)
#undef MSL_COLL1
#undef MSL_COLL2

inline bool simd_all(bool x, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::msl::rt::collect<bool>(::msl::rt::Coll::all, x, 0, file, line);
}
inline bool simd_any(bool x, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::msl::rt::collect<bool>(::msl::rt::Coll::any, x, 0, file, line);
}

}  // namespace metal
