#include "ops/matmul.h"

#include <climits>

#include "ops/backend.h"

namespace eyas::ops {

bool matmul_supports(DType t) {
  switch (t) {
    case DType::F32: case DType::F16: case DType::BF16: case DType::Q8_0: case DType::Q4_0:
    case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q4_K: case DType::Q5_K:
    case DType::Q6_K: return true;
    default: return false;
  }
}

void matmul(Encoder& enc, const Tensor& x, const Tensor& w, const Tensor& y) {
  const char* op = "matmul";
  check_dtype(op, "x", x, DType::F32);
  check_dtype(op, "y", y, DType::F32);
  check_ndim(op, "x", x, 2);
  check_ndim(op, "y", y, 2);
  if (!w.defined()) fail(op, "w is missing");
  if (!matmul_supports(w.dtype)) fail(op, "unsupported weight type " + w.describe());
  check_ndim(op, "w", w, 2);
  const int64_t T = x.dim(0), K = x.dim(1), N = w.dim(0);
  if (T < 1) fail(op, "x must have at least one row, got " + x.describe());
  if (K < 1 || N < 1) fail(op, "empty weight " + w.describe() + " or x " + x.describe());
  check_dim(op, "w", w, 1, K);
  const int be = type_traits(w.dtype).block_elems;
  if (K % be != 0)
    fail(op, "K=" + std::to_string(K) + " is not a multiple of the " + type_traits(w.dtype).name + " block size " +
                 std::to_string(be));
  check_dim(op, "y", y, 0, T);
  check_dim(op, "y", y, 1, N);
  if (T > INT32_MAX || N > INT32_MAX || K > INT32_MAX) fail(op, "dimensions must fit in int32");
  for (const Tensor* t : {&x, &w, &y})
    if (t->offset + t->nbytes() > t->buffer->size()) fail(op, t->describe() + " is larger than its buffer");
  check_writable(op, "y", y);
  if (overlaps(y, x) || overlaps(y, w)) fail(op, "y must not overlap x or w");
  const MatmulArgs a{int32_t(T), int32_t(N), int32_t(K), int32_t(w.dtype)};
  backend_for(op, enc, {&x, &w, &y}).matmul(enc, a, x, w, y);
}

}  // namespace eyas::ops
