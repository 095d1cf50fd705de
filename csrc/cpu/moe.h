// CPU kernels behind csrc/ops/moe.h.
#pragma once
#include <cstdint>

namespace eyas::cpu {

// logits: [T, E] -> idx: [T, k], w: [T, k]. Softmax in float with a fixed summation order, the k
// largest probabilities (ties to the lower expert id), divided by their sum when `renorm`.
void moe_route(int64_t T, int64_t E, int k, bool renorm, const float* logits, int32_t* idx, float* w);

}  // namespace eyas::cpu
