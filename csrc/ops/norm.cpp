#include "ops/norm.h"

#include <cmath>

#include "ops/backend.h"

namespace eyas::ops {

void rms_norm(Encoder& enc, const Tensor& x, const Tensor& w, const Tensor& y, float eps) {
  const char* op = "rms_norm";
  check_dtype(op, "x", x, DType::F32);
  check_dtype(op, "w", w, DType::F32);
  check_dtype(op, "y", y, DType::F32);
  if (x.ndim() < 1) fail(op, "x must have at least 1 dim");
  check_ndim(op, "w", w, 1);
  check_dim(op, "w", w, 0, x.dim(-1));
  if (y.shape != x.shape) fail(op, "y " + y.describe() + " must match x " + x.describe());
  if (!(eps >= 0.0f) || !std::isfinite(eps)) fail(op, "eps must be a finite non-negative number");
  Backend& backend = backend_for(op, enc, {&x, &w, &y});
  backend.rms_norm(enc, RmsNormArgs{int32_t(x.rows()), int32_t(x.dim(-1)), eps}, x, w, y);
}

}  // namespace eyas::ops
