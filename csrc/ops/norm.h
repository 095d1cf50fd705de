#pragma once
#include "core/encoder.h"

namespace eyas::ops {

// x: F32[..., dim]; w: F32[dim]; y: F32 same shape as x (may alias x).
void rms_norm(Encoder& enc, const Tensor& x, const Tensor& w, const Tensor& y, float eps);

}  // namespace eyas::ops
