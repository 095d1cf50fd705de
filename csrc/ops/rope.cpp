#include "ops/rope.h"

#include "ops/backend.h"

namespace eyas::ops {

void rope(Encoder& enc, const Tensor& x, const Tensor& positions, const Tensor& inv_freq, int rot_dim,
          RopeStyle style, const Tensor& y) {
  const char* op = "rope";
  check_dtype(op, "x", x, DType::F32);
  check_dtype(op, "positions", positions, DType::I32);
  check_dtype(op, "inv_freq", inv_freq, DType::F32);
  check_dtype(op, "y", y, DType::F32);
  check_ndim(op, "x", x, 3);
  check_ndim(op, "positions", positions, 1);
  check_ndim(op, "inv_freq", inv_freq, 1);
  check_writable(op, "y", y);
  if (y.shape != x.shape) fail(op, "y " + y.describe() + " must match x " + x.describe());
  check_dim(op, "positions", positions, 0, x.dim(0));
  const int64_t D = x.dim(2);
  if (rot_dim < 2 || rot_dim % 2 != 0 || rot_dim > D)
    fail(op, "rot_dim must be even and in [2, head_dim = " + std::to_string(D) + "], got " + std::to_string(rot_dim));
  check_dim(op, "inv_freq", inv_freq, 0, rot_dim / 2);
  if (style != RopeStyle::NeoX && style != RopeStyle::Interleaved)
    fail(op, "unknown style " + std::to_string(int(style)));
  if (x.numel() > (int64_t(1) << 31)) fail(op, "x is too large");
  Backend& backend = backend_for(op, enc, {&x, &positions, &inv_freq, &y});
  if (x.numel() == 0) return;
  const RopeArgs a{int32_t(x.dim(0)), int32_t(x.dim(1)), int32_t(D), rot_dim, int32_t(style)};
  backend.rope(enc, a, x, positions, inv_freq, y);
}

}  // namespace eyas::ops
