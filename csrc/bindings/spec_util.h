// Helpers shared by the spec binding files: owned numpy arrays from std::vectors, typed inputs.
#pragma once
#include <string>
#include <vector>

#include "bindings/convert.h"

namespace eyas::bind {

// A numpy array that owns a copy of `v` (small per-round outputs; copying is cheaper than tracking).
template <typename T>
nb::object vec_to_numpy(std::vector<T> v, std::vector<size_t> shape = {}) {
  if (shape.empty()) shape = {v.size()};
  auto* holder = new std::vector<T>(std::move(v));
  nb::capsule owner(holder, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  nb::ndarray<nb::numpy, T, nb::c_contig> arr(holder->data(), shape.size(), shape.data(), owner);
  return nb::cast(arr);
}

// Views `a` as a Tensor and checks its dtype and rank ("[op] name: ..." on mismatch).
inline Tensor typed(const char* op, const char* name, Array a, DType dtype, int ndim) {
  Tensor t = from_numpy(op, name, a);
  check_dtype(op, name, t, dtype);
  check_ndim(op, name, t, ndim);
  return t;
}

}  // namespace eyas::bind
