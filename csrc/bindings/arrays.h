// Helpers shared by binding files: owned numpy arrays from std::vectors, typed inputs, weights,
// draft trees as dicts.
#pragma once
#include <string>
#include <vector>

#include "bindings/convert.h"
#include "speculative/tree.h"

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

// (array, dtype_id, shape) -> zero-copy Tensor; F16/BF16 arrive as raw uint8 bytes.
inline Tensor parse_weight(const char* kOp, const std::string& name, nb::handle v) {
  nb::tuple tup;
  if (!nb::try_cast<nb::tuple>(v, tup) || tup.size() != 3)
    fail(kOp, "weight '" + name + "' must be a tuple (array, dtype_id, shape)");
  Array arr;
  int32_t dtype_id;
  std::vector<int64_t> shape;
  if (!nb::try_cast<Array>(tup[0], arr)) fail(kOp, "weight '" + name + "': not a C-contiguous numpy array");
  if (!nb::try_cast<int32_t>(tup[1], dtype_id) || !nb::try_cast<std::vector<int64_t>>(tup[2], shape))
    fail(kOp, "weight '" + name + "': dtype_id must be an int and shape a sequence of ints");
  DType dt;
  try {
    dt = dtype_from_int(dtype_id);
  } catch (const std::invalid_argument&) {
    fail(kOp, "weight '" + name + "': unknown dtype id " + std::to_string(dtype_id));
  }
  if (shape.empty()) fail(kOp, "weight '" + name + "': shape must not be empty");
  for (int64_t x : shape)
    if (x <= 0) fail(kOp, "weight '" + name + "': shape entries must be positive");
  std::string what = "weight '" + name + "'";
  if (arr.dtype() == nb::dtype<uint8_t>() && dt != DType::U8) {
    if (!is_quantized(dt) && dt != DType::F32 && dt != DType::F16 && dt != DType::BF16)
      fail(kOp, what + ": unsupported dtype " + type_traits(dt).name);
    if (shape.back() % type_traits(dt).block_elems)
      fail(kOp, what + ": row length must be a multiple of " + std::to_string(type_traits(dt).block_elems));
    return from_bytes(kOp, what.c_str(), arr, dt, shape);
  }
  Tensor t = from_numpy(kOp, what.c_str(), arr);
  if (t.dtype != dt)
    fail(kOp, what + ": array dtype " + type_traits(t.dtype).name + " does not match dtype id " + type_traits(dt).name);
  int64_t numel = 1;
  for (int64_t x : shape) numel *= x;
  if (numel != t.numel())
    fail(kOp, what + ": array has " + std::to_string(t.numel()) + " elements, shape needs " + std::to_string(numel));
  t.shape = shape;
  return t;
}

// A draft tree as numpy arrays: tokens, parents, depths, scores [N] and the visibility mask [N, N].
inline nb::dict tree_dict(const speculative::DraftTree& t) {
  nb::dict d;
  const size_t n = size_t(t.size());
  d["tokens"] = vec_to_numpy(t.tokens);
  d["parents"] = vec_to_numpy(t.parents);
  d["depths"] = vec_to_numpy(t.depths);
  d["scores"] = vec_to_numpy(t.scores);
  d["mask"] = vec_to_numpy(t.mask, {n, n});
  return d;
}

}  // namespace eyas::bind
