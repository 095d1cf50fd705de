#pragma once
#include "core/encoder.h"

namespace eyas::ops {

// a: F32[..., N]; b: same shape as a, or F32[N] added to every row (bias); y: like a (may alias).
void add(Encoder& enc, const Tensor& a, const Tensor& b, const Tensor& y);
// y = silu(gate) * up; all three F32 of one shape (y may alias either input).
void silu_mul(Encoder& enc, const Tensor& gate, const Tensor& up, const Tensor& y);
// The halves of each row of a fused gate|up projection: gu F32[T, 2I], y F32[T, I] (not overlapping gu),
// y[r, c] = silu(gu[r, c]) * gu[r, I + c], the bits silu_mul gives on the halves copied apart.
void silu_mul_halves(Encoder& enc, const Tensor& gu, const Tensor& y);
// y = x * sigmoid(g) (gated attention output); all three F32 of one shape.
void sigmoid_mul(Encoder& enc, const Tensor& x, const Tensor& g, const Tensor& y);
// y = x * s; F32 of one shape.
void scale(Encoder& enc, const Tensor& x, float s, const Tensor& y);

}  // namespace eyas::ops
