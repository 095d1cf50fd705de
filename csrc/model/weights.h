// Taking a model's weights out of the loader's map: shape and type checks with messages that
// name the tensor, and the row concatenation behind fused matmuls.
#pragma once
#include <string>
#include <vector>

#include "model/spec.h"

namespace eyas::model {

// Weight `name` after checking its shape and type ("[Transformer] missing weight 'blk.0.attn_q' [64, 64]",
// wrong shape, unsupported dtype, too small a buffer). float_only: norms and biases (F32).
// A missing optional weight gives an undefined Tensor.
Tensor take(const WeightMap& w, const std::string& name, std::vector<int64_t> shape, bool float_only,
            bool required = true);
// Rows of several same-typed tensors stacked into one tensor: one matmul over the stack gives
// every part's columns with the same bits (each output column is its own dot product). Parts that
// lie back to back in memory are viewed as one; others are copied.
Tensor concat_rows(const std::vector<const Tensor*>& parts);
// Bytes concat_rows has copied in this process (the memory fused weights cost beyond the file).
int64_t fused_copy_bytes();

}  // namespace eyas::model
