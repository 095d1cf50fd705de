#include "ops/elementwise.h"

#include "ops/backend.h"

namespace eyas::ops {

static ElementwiseArgs same_shape(const char* op, const char* na, const Tensor& a, const char* nb, const Tensor& b,
                                  const Tensor& y) {
  check_dtype(op, na, a, DType::F32);
  check_dtype(op, nb, b, DType::F32);
  check_dtype(op, "y", y, DType::F32);
  check_writable(op, "y", y);
  if (a.ndim() < 1) fail(op, std::string(na) + " must have at least 1 dim");
  if (b.shape != a.shape) fail(op, std::string(nb) + " " + b.describe() + " must match " + na + " " + a.describe());
  if (y.shape != a.shape) fail(op, "y " + y.describe() + " must match " + na + " " + a.describe());
  if (a.numel() >= (int64_t(1) << 31)) fail(op, std::string(na) + " is too large");
  return ElementwiseArgs{int32_t(a.rows()), int32_t(a.dim(-1)), 0, 0.0f};
}

void add(Encoder& enc, const Tensor& a, const Tensor& b, const Tensor& y) {
  const char* op = "add";
  check_dtype(op, "a", a, DType::F32);
  check_dtype(op, "b", b, DType::F32);
  ElementwiseArgs args;
  if (b.shape != a.shape && a.ndim() >= 2 && b.ndim() == 1 && b.dim(0) == a.dim(-1)) {
    args = same_shape(op, "a", a, "a", a, y);  // checks y and a; b is one row
    args.broadcast = 1;
  } else {
    if (b.shape != a.shape)
      fail(op, "b " + b.describe() + " must match a " + a.describe() + " or be one row F32[" +
                   std::to_string(a.ndim() ? a.dim(-1) : 0) + "]");
    args = same_shape(op, "a", a, "b", b, y);
  }
  Backend& backend = backend_for(op, enc, {&a, &b, &y});
  if (a.numel() == 0) return;
  backend.add(enc, args, a, b, y);
}

void silu_mul(Encoder& enc, const Tensor& gate, const Tensor& up, const Tensor& y) {
  const char* op = "silu_mul";
  ElementwiseArgs args = same_shape(op, "gate", gate, "up", up, y);
  Backend& backend = backend_for(op, enc, {&gate, &up, &y});
  if (gate.numel() == 0) return;
  backend.silu_mul(enc, args, gate, up, y);
}

void sigmoid_mul(Encoder& enc, const Tensor& x, const Tensor& g, const Tensor& y) {
  const char* op = "sigmoid_mul";
  ElementwiseArgs args = same_shape(op, "x", x, "g", g, y);
  Backend& backend = backend_for(op, enc, {&x, &g, &y});
  if (x.numel() == 0) return;
  backend.sigmoid_mul(enc, args, x, g, y);
}

void scale(Encoder& enc, const Tensor& x, float s, const Tensor& y) {
  const char* op = "scale";
  ElementwiseArgs args = same_shape(op, "x", x, "x", x, y);
  args.s = s;
  Backend& backend = backend_for(op, enc, {&x, &y});
  if (x.numel() == 0) return;
  backend.scale(enc, args, x, y);
}

}  // namespace eyas::ops
