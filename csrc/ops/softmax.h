#pragma once
#include "core/encoder.h"

namespace eyas::ops {

// x, y: F32[rows, N]; softmax (or log-softmax) of x / temperature over the last axis.
void softmax(Encoder& enc, const Tensor& x, float temperature, bool log, const Tensor& y);
// x: F32[rows, N]; idx: I32[rows], the first index of the row maximum.
void argmax(Encoder& enc, const Tensor& x, const Tensor& idx);
// x: F32[rows, N]; values: F32[rows, k], idx: I32[rows, k]; sorted descending, ties to the lower index.
void topk(Encoder& enc, const Tensor& x, int k, const Tensor& values, const Tensor& idx);

}  // namespace eyas::ops
