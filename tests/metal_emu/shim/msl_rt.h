// Runtime interface between emulated kernels (through the shim and the generated binding
// stubs) and the fiber executor (executor.cpp). Plain C++: included before the MSL keyword
// macros exist.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>

namespace msl {

// Element type and component count of scalars and clang ext-vectors.
template <class T>
struct vt {
  using elem = T;
  static constexpr int n = 1;
};
template <class T, int N>
struct vt<T __attribute__((ext_vector_type(N)))> {
  using elem = T;
  static constexpr int n = N;
};

namespace rt {

// Kernel parameter attributes the lowering step understands (same spelling as MSL).
enum class Bi : int {
  thread_position_in_grid,
  thread_position_in_threadgroup,
  threadgroup_position_in_grid,
  threads_per_threadgroup,
  threadgroups_per_grid,
  threads_per_grid,
  thread_index_in_threadgroup,
  thread_index_in_simdgroup,
  simdgroup_index_in_threadgroup,
  threads_per_simdgroup,
  simdgroups_per_threadgroup,
};

constexpr int kSimdWidth = 32;
constexpr int kSlotBytes = 64;

enum class Coll : int {
  sum, product, max, min, and_, or_, xor_, prefix_incl, prefix_excl,
  shuffle, shuffle_down, shuffle_up, shuffle_xor, broadcast, broadcast_first, all, any, barrier,
};

// One lane's deposit at a simd collective; the executor calls `fn` once every lane of the
// simdgroup has arrived at the same call site.
struct CollSlot {
  alignas(16) unsigned char in[kSlotBytes];
  alignas(16) unsigned char out[kSlotBytes];
  uint32_t arg;
};
using CollFn = void (*)(Coll op, CollSlot* const* lanes, int n);

// Implemented in executor.cpp.
void barrier(const char* file, int line);
void collective(Coll op, CollFn fn, const char* file, int line);
CollSlot* my_slot();
void builtin_value(Bi b, uint32_t out[3]);
void* buffer_ptr(int index);
void* tg_arg_ptr(int index);
void* tg_array(const char* file, int line, size_t size, size_t align);
[[noreturn]] void fail(const char* msg);

template <class F, int I>
struct param;
template <class R, class... A, int I>
struct param<R (*)(A...), I> {
  using type = std::tuple_element_t<I, std::tuple<A...>>;
};
template <class F, int I>
using param_t = typename param<F, I>::type;

template <class T>
inline T builtin(Bi b) {
  uint32_t v[3];
  builtin_value(b, v);
  using E = typename vt<T>::elem;
  if constexpr (vt<T>::n == 1) {
    return T(v[0]);
  } else {
    T r;
    for (int i = 0; i < vt<T>::n; ++i) r[i] = E(v[i]);
    return r;
  }
}

// A [[buffer(i)]] parameter: pointer or reference into the bound buffer.
template <class T>
inline T buffer_arg(int index) {
  void* p = buffer_ptr(index);
  if constexpr (std::is_reference_v<T>) {
    return *reinterpret_cast<std::remove_reference_t<T>*>(p);
  } else {
    static_assert(std::is_pointer_v<T>, "[[buffer]] parameters are pointers or references");
    return reinterpret_cast<T>(p);
  }
}
template <class T>
inline T tg_arg(int index) {
  static_assert(std::is_pointer_v<T>, "[[threadgroup]] parameters are pointers");
  return reinterpret_cast<T>(tg_arg_ptr(index));
}

// Bytes a reference parameter needs, and the alignment any bound pointer must have.
template <class T>
constexpr size_t param_size() {
  if constexpr (std::is_reference_v<T>) return sizeof(std::remove_reference_t<T>);
  return 0;
}
template <class T>
constexpr size_t param_align() {
  if constexpr (std::is_reference_v<T>) return alignof(std::remove_reference_t<T>);
  if constexpr (std::is_pointer_v<T>) {
    using P = std::remove_cv_t<std::remove_pointer_t<T>>;
    if constexpr (std::is_void_v<P>) return 1;
    else return alignof(P);
  }
  return 1;
}

enum class PKind : int { buffer, threadgroup, builtin };
struct ParamSpec {
  PKind kind;
  int index;     // buffer / threadgroup index, or Bi value
  size_t size;   // bytes a reference parameter reads (0 for pointers)
  size_t align;  // required alignment of the bound address
};
struct KernelEntry {
  const char* name;
  void (*stub)();
  const ParamSpec* params;
  int nparams;
  const char* file;
};
struct Registrar {
  explicit Registrar(const KernelEntry* e);
};

// --- simd collective arithmetic, per element ---------------------------------------------
template <class T, class F>
inline T ew2(T a, T b, F f) {
  if constexpr (vt<T>::n == 1) {
    return f(a, b);
  } else {
    T r;
    for (int i = 0; i < vt<T>::n; ++i) r[i] = f(a[i], b[i]);
    return r;
  }
}

template <class T>
void coll_compute(Coll op, CollSlot* const* lanes, int n) {
  using E = typename vt<T>::elem;
  static_assert(sizeof(T) <= kSlotBytes, "simd collective value too large");
  auto in = [&](int l) {
    T v;
    std::memcpy(&v, lanes[l]->in, sizeof(T));
    return v;
  };
  auto put = [&](int l, T v) { std::memcpy(lanes[l]->out, &v, sizeof(T)); };
  auto mx = [](E a, E b) -> E {
    if constexpr (std::is_floating_point_v<E> || !std::is_integral_v<E>) {
      if (a != a) return b;  // fmax semantics: NaN loses
      if (b != b) return a;
    }
    return a > b ? a : b;
  };
  auto mn = [](E a, E b) -> E {
    if constexpr (std::is_floating_point_v<E> || !std::is_integral_v<E>) {
      if (a != a) return b;
      if (b != b) return a;
    }
    return a < b ? a : b;
  };
  // Reductions fold in lane order: deterministic, and a valid GPU order.
  switch (op) {
    case Coll::sum: case Coll::product: case Coll::max: case Coll::min:
    case Coll::and_: case Coll::or_: case Coll::xor_: case Coll::all: case Coll::any: {
      T acc = in(0);
      for (int l = 1; l < n; ++l) {
        T v = in(l);
        switch (op) {
          case Coll::sum: acc = acc + v; break;
          case Coll::product: acc = acc * v; break;
          case Coll::max: acc = ew2(acc, v, mx); break;
          case Coll::min: acc = ew2(acc, v, mn); break;
          default:
            if constexpr (std::is_integral_v<E>) {
              if (op == Coll::and_ || op == Coll::all) acc = acc & v;
              else if (op == Coll::or_ || op == Coll::any) acc = acc | v;
              else acc = acc ^ v;
            }
        }
      }
      for (int l = 0; l < n; ++l) put(l, acc);
      break;
    }
    case Coll::prefix_incl: case Coll::prefix_excl: {
      T acc{};
      for (int l = 0; l < n; ++l) {
        T v = in(l);
        if (op == Coll::prefix_incl) acc = acc + v;
        put(l, acc);
        if (op == Coll::prefix_excl) acc = acc + v;
      }
      break;
    }
    default: {
      for (int l = 0; l < n; ++l) {
        int64_t a = lanes[l]->arg, src = l;
        switch (op) {
          case Coll::shuffle: case Coll::broadcast: src = a; break;
          case Coll::broadcast_first: src = 0; break;
          case Coll::shuffle_down: src = l + a; break;
          case Coll::shuffle_up: src = l - a; break;
          case Coll::shuffle_xor: src = l ^ a; break;
          default: break;
        }
        // Out-of-range sources keep the lane's own value (MSL: shuffle_down/up "unchanged").
        if (src < 0 || src >= n) src = l;
        put(l, in(int(src)));
      }
      break;
    }
  }
}

template <class T>
inline T collect(Coll op, T x, uint32_t arg, const char* file, int line) {
  CollSlot* s = my_slot();
  std::memcpy(s->in, &x, sizeof(T));
  s->arg = arg;
  collective(op, &coll_compute<T>, file, line);
  T r;
  std::memcpy(&r, s->out, sizeof(T));
  return r;
}

}  // namespace rt
}  // namespace msl
