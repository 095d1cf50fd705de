// One row on the calling thread, for what runs on the host between device steps (the sampler and the
// greedy walk of csrc/speculative): the CPU softmax and argmax kernels' rows, so sampling and greedy
// acceptance have their bits. Declared at the ops level so nothing above csrc/ops includes csrc/cpu;
// defined in csrc/cpu.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/tensor.h"

namespace eyas::ops {

// y[n] = softmax((x - max) / temperature), the bits of ops::softmax; y may be x.
void softmax_row_host(const float* x, int n, float temperature, float* y);
// The first index of the maximum of x[n] (NaN skipped; an all-NaN row gives 0), as ops::argmax picks it.
int32_t argmax_row_host(const float* x, int n);
// sum of exp(x[i] - mx) over x[n] (NaN skipped) in double: lane i % 16 of 16 partial sums, folded in lane
// order, with the softmax kernels' exp, so every SIMD level gives the same bits (the draft tree's scores).
double exp_sum_row_host(const float* x, int64_t n, float mx);
// sum of w[i] * x[i] over [0, k) in 16 lanes (lane i % 16, fused multiply-adds in i order) folded in lane
// order, as the float-weight matmuls define a dot (docs/performance.md §2): the same bits on every SIMD level.
float dot16_row_host(const float* w, const float* x, int64_t k);
// Requests the lines of [p, p + bytes) into the cache (a hint: nothing changes but timing).
void prefetch_host(const void* p, size_t bytes);
// The k largest of x[n] (k <= n), best first, as ops::topk picks them: values[k], idx[k].
void topk_row_host(const float* x, int n, int k, float* values, int32_t* idx);
// One weight row of k elements stored as `wtype` (a DType; GGUF block layout) into y[k], as the
// embedding kernel dequantizes it.
void dequantize_row_host(int32_t wtype, const uint8_t* row, int64_t k, float* y);
// Q4_0 blocks of x[k] (k a multiple of 32) into out (k / 32 blocks of 18 bytes), GGUF's rounding.
void quantize_row_q4_0_host(const float* x, int64_t k, uint8_t* out);
// w: [N, K] in any type dequantize_row_host reads (K a multiple of 32) -> a new Q4_0 [N, K], row by row.
Tensor requantize_q4_0_host(const char* op, const Tensor& w);

}  // namespace eyas::ops
