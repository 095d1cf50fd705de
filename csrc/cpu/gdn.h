// Gated DeltaNet CPU kernels (ops/gdn.h). Work splits by rows (conv) or value heads (core), never
// inside a sum; every node runs the same instruction sequence from its parent's state, so a tree
// row, a chain row and a replayed row of the same path have the same bits.
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "ops/backend.h"

namespace eyas::cpu {

// u, y: [T, C]; parents: [T]; conv_state: [K-1, C]; w: [C, K].
void gdn_conv(int T, int C, int K, const float* u, const int32_t* parents, const float* conv_state, const float* w,
              float* y, ThreadPool& pool);
// conv_in, conv_out: [K-1, C] (may alias); u: [N, C]; nodes: [m] or null (rows 0..m-1). Split by
// channels (a copy: any split gives the same bits).
void gdn_conv_state(int C, int K, const float* conv_in, const float* u, const int32_t* nodes, int m, float* conv_out,
                    ThreadPool& pool);
// qkv: [N, 2*Hk*Dk + Hv*Dv]; a, b: [N, Hv]; A, dt_bias: [Hv]; nodes: [m] or null; parents: [m];
// state_in, state_out: [Hv, Dk, Dv] (state_out null for a tree; may alias state_in); o: [m, Hv*Dv].
void gdn_core(const ops::GdnDims& d, int m, const float* qkv, const float* a, const float* b, const float* A,
              const float* dt_bias, const int32_t* nodes, const int32_t* parents, const float* state_in,
              float* state_out, float* o, ThreadPool& pool);

}  // namespace eyas::cpu
