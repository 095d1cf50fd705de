// Softmax / log-softmax CPU kernel over the last axis.
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// x, y: [rows, cols]; y = softmax((x - max) / temperature), or its log.
void softmax(const SoftmaxArgs& a, const float* x, float* y, ThreadPool& pool);

}  // namespace eyas::cpu
