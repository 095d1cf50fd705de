// CPU kernels behind csrc/ops/model_misc.h. Arguments are validated by the ops layer.
#pragma once
#include <cstdint>

#include "core/thread_pool.h"

namespace eyas::cpu {

// x: [rows, x_stride]; y: [rows, y_stride]; copies n floats per row from x + x_col to y + y_col.
void copy_cols(int64_t rows, int64_t n, const float* x, int64_t x_stride, float* y, int64_t y_stride,
               ThreadPool& pool);
// x, y: [rows, n]; g: [rows]. y = x * sigmoid(g) row-wise.
void sigmoid_scale_rows(int64_t rows, int64_t n, const float* x, const float* g, float* y, ThreadPool& pool);

}  // namespace eyas::cpu
