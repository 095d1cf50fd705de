// Rotary position embedding CPU kernel (semantics: csrc/ops/rope.h).
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// x, y: [tokens, heads, head_dim] (may alias); pos: [tokens]; inv_freq: [rot_dim / 2].
void rope(const RopeArgs& a, const float* x, const int32_t* pos, const float* inv_freq, float* y, ThreadPool& pool);

}  // namespace eyas::cpu
