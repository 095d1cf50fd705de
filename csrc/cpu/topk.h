// Argmax and top-k over the last axis; results are unique under the order (value desc, index asc).
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// x: [rows, cols]; idx: [rows], the first index of the maximum (NaN is skipped; all-NaN rows give 0).
void argmax(const TopkArgs& a, const float* x, int32_t* idx, ThreadPool& pool);
// One row of n on the calling thread, as argmax() picks it.
int32_t argmax_row(const float* x, int n);
// x: [rows, cols]; values, idx: [rows, k] sorted by value descending, ties to the lower index; NaN ranks
// below -inf.
void topk(const TopkArgs& a, const float* x, float* values, int32_t* idx, ThreadPool& pool);

}  // namespace eyas::cpu
