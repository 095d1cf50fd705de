#include "ops/softmax.h"

#include <cmath>

#include "ops/backend.h"

namespace eyas::ops {

static void check_rows(const char* op, const Tensor& x) {
  check_dtype(op, "x", x, DType::F32);
  check_ndim(op, "x", x, 2);
  if (x.dim(1) < 1) fail(op, "x must have at least one column, got " + x.describe());
  if (x.numel() >= (int64_t(1) << 31)) fail(op, "x is too large");
}

void softmax(Encoder& enc, const Tensor& x, float temperature, bool log, const Tensor& y) {
  const char* op = "softmax";
  check_rows(op, x);
  check_dtype(op, "y", y, DType::F32);
  check_writable(op, "y", y);
  if (y.shape != x.shape) fail(op, "y " + y.describe() + " must match x " + x.describe());
  if (!(temperature > 0.0f) || !std::isfinite(temperature))
    fail(op, "temperature must be a finite positive number, got " + std::to_string(temperature));
  Backend& backend = backend_for(op, enc, {&x, &y});
  if (x.dim(0) == 0) return;
  backend.softmax(enc, SoftmaxArgs{int32_t(x.dim(0)), int32_t(x.dim(1)), temperature, log ? 1 : 0}, x, y);
}

void argmax(Encoder& enc, const Tensor& x, const Tensor& idx) {
  const char* op = "argmax";
  check_rows(op, x);
  check_dtype(op, "idx", idx, DType::I32);
  check_ndim(op, "idx", idx, 1);
  check_dim(op, "idx", idx, 0, x.dim(0));
  check_writable(op, "idx", idx);
  Backend& backend = backend_for(op, enc, {&x, &idx});
  if (x.dim(0) == 0) return;
  backend.argmax(enc, TopkArgs{int32_t(x.dim(0)), int32_t(x.dim(1)), 1}, x, idx);
}

void topk(Encoder& enc, const Tensor& x, int k, const Tensor& values, const Tensor& idx) {
  const char* op = "topk";
  check_rows(op, x);
  if (k < 1 || k > x.dim(1)) fail(op, "k must be in [1, " + std::to_string(x.dim(1)) + "], got " + std::to_string(k));
  check_dtype(op, "values", values, DType::F32);
  check_dtype(op, "idx", idx, DType::I32);
  const std::vector<int64_t> want{x.dim(0), int64_t(k)};
  if (values.shape != want) fail(op, "values " + values.describe() + " must be [rows, k]");
  if (idx.shape != want) fail(op, "idx " + idx.describe() + " must be [rows, k]");
  check_writable(op, "values", values);
  check_writable(op, "idx", idx);
  Backend& backend = backend_for(op, enc, {&x, &values, &idx});
  if (x.dim(0) == 0) return;
  backend.topk(enc, TopkArgs{int32_t(x.dim(0)), int32_t(x.dim(1)), k}, x, values, idx);
}

}  // namespace eyas::ops
