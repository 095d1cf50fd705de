// One row on the calling thread, for what runs on the host between device steps (the sampler and the
// greedy walk of csrc/speculative): the CPU softmax and argmax kernels' rows, so sampling and greedy
// acceptance have their bits. Declared at the ops level so nothing above csrc/ops includes csrc/cpu;
// defined in csrc/cpu.
#pragma once
#include <cstdint>

namespace eyas::ops {

// y[n] = softmax((x - max) / temperature), the bits of ops::softmax; y may be x.
void softmax_row_host(const float* x, int n, float temperature, float* y);
// The first index of the maximum of x[n] (NaN skipped; an all-NaN row gives 0), as ops::argmax picks it.
int32_t argmax_row_host(const float* x, int n);
// sum of exp(x[i] - mx) over x[n] (NaN skipped) in double: lane i % 16 of 16 partial sums, folded in lane
// order, with the softmax kernels' exp, so every SIMD level gives the same bits (the draft tree's scores).
double exp_sum_row_host(const float* x, int64_t n, float mx);

}  // namespace eyas::ops
