// Softmax / log-softmax CPU kernel over the last axis.
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// x, y: [rows, cols]; y = softmax((x - max) / temperature), or its log.
void softmax(const SoftmaxArgs& a, const float* x, float* y, ThreadPool& pool);

// One row of n on the calling thread, softmax() with log off: the same bits. y may be x.
void softmax_row(const float* x, int n, float temperature, float* y);

}  // namespace eyas::cpu
