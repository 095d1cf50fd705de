// The level loop of a drafter's EAGLE-2 tree expansion, shared by the EAGLE-3 and MTP drafters:
// each level runs the frontier through the drafter, hands its logits to the TreeBuilder, and
// gathers the next frontier's inputs from its parents' outputs.
#pragma once
#include <cstring>
#include <vector>

#include "core/tensor.h"
#include "speculative/tree.h"

namespace eyas::speculative {

// b: started (b.start done). ids: I32 rows, pos: I32 rows, in: F32[rows, H] the frontier's input
// features (the first frontier's already filled), out: F32[rows, H] the outputs the forward leaves,
// logits: F32[rows, V] its logits. forward(F, mask U8[F, S]) runs the F frontier rows after `length`
// committed slots. Positions: depth d -> length + d - 1.
template <typename Forward>
DraftTree expand_levels(TreeBuilder& b, int length, int64_t H, const Tensor& ids, const Tensor& pos, const Tensor& in,
                        const Tensor& out, const Tensor& logits, Forward forward) {
  std::vector<float> next;
  while (b.wants_level()) {
    const int F = int(b.frontier_tokens().size());
    const int S = b.slots_run() + F;
    std::memcpy(ids.data<int32_t>(), b.frontier_tokens().data(), size_t(F) * sizeof(int32_t));
    for (int j = 0; j < F; ++j) pos.data<int32_t>()[j] = length + b.level() - 1;
    std::vector<uint8_t> m = b.frontier_mask();
    Tensor mask = Tensor::empty(DType::U8, {F, S});
    std::memcpy(mask.data<uint8_t>(), m.data(), m.size());
    forward(F, mask);
    b.extend(logits.data<float>());
    const auto& rows = b.frontier_parent_rows();
    next.resize(rows.size() * size_t(H));
    for (size_t j = 0; j < rows.size(); ++j)
      std::memcpy(&next[j * size_t(H)], out.data<float>() + rows[j] * H, size_t(H) * sizeof(float));
    std::memcpy(in.data<float>(), next.data(), next.size() * sizeof(float));
  }
  return b.finish();
}

}  // namespace eyas::speculative
