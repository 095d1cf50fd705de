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
  return ElementwiseArgs{int32_t(a.rows()), int32_t(a.dim(-1)), 0, 0.0f, 0};
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

void silu_mul_halves(Encoder& enc, const Tensor& gu, const Tensor& y) {
  const char* op = "silu_mul_halves";
  check_dtype(op, "gu", gu, DType::F32);
  check_dtype(op, "y", y, DType::F32);
  check_writable(op, "y", y);
  if (gu.ndim() != 2 || gu.dim(1) % 2 != 0) fail(op, "gu " + gu.describe() + " must be F32[T, 2I]");
  const int64_t I = gu.dim(1) / 2;
  if (y.shape != std::vector<int64_t>{gu.dim(0), I})
    fail(op, "y " + y.describe() + " must be F32[" + std::to_string(gu.dim(0)) + ", " + std::to_string(I) + "]");
  if (gu.numel() >= (int64_t(1) << 31)) fail(op, "gu is too large");
  if (overlaps(y, gu)) fail(op, "y must not overlap gu");
  Backend& backend = backend_for(op, enc, {&gu, &y});
  if (y.numel() == 0) return;
  Tensor up = gu;  // the second halves: a view from column I of row 0 to the end of gu
  up.offset += size_t(I) * sizeof(float);
  up.shape = {gu.numel() - I};
  backend.silu_mul(enc, ElementwiseArgs{int32_t(gu.dim(0)), int32_t(I), 0, 0.0f, int32_t(2 * I)}, gu, up, y);
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
