// Views into scratch tensors that the layers share: row ranges, reshapes, split fused columns.
// A view aliases its tensor's buffer; nothing here copies except split_cols for several rows.
#pragma once
#include <initializer_list>
#include <vector>

#include "core/encoder.h"

namespace eyas::model {

// Rows [r0, r0+n) of a 2-D F32 tensor, or the same rows viewed with another trailing shape.
Tensor rows(const Tensor& t, int64_t r0, int64_t n, std::vector<int64_t> tail = {});
// First n entries of a 1-D tensor.
Tensor head(const Tensor& t, int64_t n);
Tensor reshape(const Tensor& t, std::vector<int64_t> shape);
// Splits the columns of a fused matmul output [t, sum of widths] into the given [t, width]
// tensors: for one row they become plain views (no dispatch), for more rows copies.
void split_cols(Encoder& enc, const Tensor& fused, std::initializer_list<Tensor*> parts);

}  // namespace eyas::model
