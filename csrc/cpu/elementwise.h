// Elementwise CPU kernels: exact per element, so any split gives the same bits.
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// a, y: [rows, cols]; b: [rows, cols], or [cols] when a.broadcast.
void add(const ElementwiseArgs& a, const float* x, const float* b, float* y, ThreadPool& pool);
// y[i] = silu(y[i]) over [0, n), on the calling thread (its caller splits the work); silu_mul's silu.
void silu_inplace(float* y, int64_t n);
// y = silu(g) * u = g / (1 + exp(-g)) * u; all [rows, cols].
void silu_mul(const ElementwiseArgs& a, const float* g, const float* u, float* y, ThreadPool& pool);
// y = x / (1 + exp(-g)) = x * sigmoid(g); all [rows, cols].
void sigmoid_mul(const ElementwiseArgs& a, const float* x, const float* g, float* y, ThreadPool& pool);
// y = x * a.s
void scale(const ElementwiseArgs& a, const float* x, float* y, ThreadPool& pool);

}  // namespace eyas::cpu
