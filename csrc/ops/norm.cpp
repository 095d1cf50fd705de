#include "ops/norm.h"

#include <cmath>

#include "cpu/kernels.h"

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
  RmsNormArgs a{int32_t(x.rows()), int32_t(x.dim(-1)), eps};
  // Raw pointers, not Tensor copies, in the capture: recording stays allocation-free; the
  // encoder keeps the buffers alive.
  enc.dispatch(op, {&x, &w}, {&y},
               [a, xp = x.data<float>(), wp = w.data<float>(), yp = y.data<float>()](ThreadPool& pool) {
                 cpu::rms_norm(a, xp, wp, yp, pool);
               });
}

}  // namespace eyas::ops
