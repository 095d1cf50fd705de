#pragma once
#include "core/encoder.h"

namespace eyas::ops {

// y[t] = dequantize(w[ids[t]]).  w: [V,K] of any matmul weight type; ids: I32[T] with every id
// in [0, V) (checked now, before dispatch); y: F32[T,K].
void embedding(Encoder& enc, const Tensor& w, const Tensor& ids, const Tensor& y);

}  // namespace eyas::ops
