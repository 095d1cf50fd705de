#include "ops/model_misc.h"

#include "ops/backend.h"

namespace eyas::ops {

void copy_cols(Encoder& enc, const Tensor& x, int x_col, const Tensor& y, int y_col, int n) {
  const char* op = "copy_cols";
  check_dtype(op, "x", x, DType::F32);
  check_dtype(op, "y", y, DType::F32);
  check_ndim(op, "x", x, 2);
  check_ndim(op, "y", y, 2);
  check_dim(op, "y", y, 0, x.dim(0));
  if (n < 0 || x_col < 0 || y_col < 0 || x_col + int64_t(n) > x.dim(1) || y_col + int64_t(n) > y.dim(1))
    fail(op, "column range out of bounds: x " + x.describe() + " [" + std::to_string(x_col) + ", +" +
                 std::to_string(n) + "), y " + y.describe() + " [" + std::to_string(y_col) + ", +" + std::to_string(n) + ")");
  backend_for(op, enc, {&x, &y}).copy_cols(enc, x, x_col, y, y_col, n);
}

void sigmoid_scale_rows(Encoder& enc, const Tensor& x, const Tensor& g, const Tensor& y) {
  const char* op = "sigmoid_scale_rows";
  check_dtype(op, "x", x, DType::F32);
  check_dtype(op, "g", g, DType::F32);
  check_dtype(op, "y", y, DType::F32);
  check_ndim(op, "x", x, 2);
  check_ndim(op, "g", g, 2);
  check_dim(op, "g", g, 0, x.dim(0));
  check_dim(op, "g", g, 1, 1);
  if (y.shape != x.shape) fail(op, "y " + y.describe() + " must match x " + x.describe());
  backend_for(op, enc, {&x, &g, &y}).sigmoid_scale_rows(enc, x, g, y);
}

}  // namespace eyas::ops
