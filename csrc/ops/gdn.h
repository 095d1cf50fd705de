// Gated DeltaNet ops (reference/qwen35_hybrid.md §3b, §5): the causal depthwise conv over a node's
// window gathered along its parents, the conv window after a path, and the delta-rule core. Each
// node's result depends only on its root-to-node path, so a tree row equals a rerun of its path.
#pragma once
#include "core/encoder.h"
#include "ops/backend.h"

namespace eyas::ops {

// y[i] = silu(sum_j w[:, j] * window_i[j]): window_i = the K raw rows ending at u[i], following
// parents (row i's predecessor is parents[i]; -1 continues into conv_state, newest row last).
// u: F32[T, C]; parents: I32[T], parents[i] in [-1, i); conv_state: F32[K-1, C]; w: F32[C, K]; y: F32[T, C].
void gdn_conv(Encoder& enc, const Tensor& u, const Tensor& parents, const Tensor& conv_state, const Tensor& w,
              const Tensor& y);

// conv_out = the last K-1 rows of conv_in ++ u[nodes] (the window after the path; may alias conv_in).
// conv_in, conv_out: F32[K-1, C]; u: F32[N, C]; nodes: I32[m] in [0, N), or undefined = all N rows.
void gdn_conv_state(Encoder& enc, const Tensor& conv_in, const Tensor& u, const Tensor& nodes, const Tensor& conv_out);

// The delta rule over m nodes (rows nodes[j] of the inputs, undefined = rows 0..m-1): node j starts from
// the state of node parents[j] (-1: state_in); value head h reads key head h / (Hv/Hk), or h % Hk when
// d.tiled (GdnDims). With state_out the nodes must form a chain (parents[j] = j - 1) and the last
// node's state is written there (state_out may alias state_in); a tree keeps its states transient.
// qkv: F32[N, 2*Hk*Dk + Hv*Dv] (conv output: q | k | v); a, b: F32[N, Hv] (raw alpha/beta projections);
// A: F32[Hv] (-exp(A_log)); dt_bias: F32[Hv]; parents: I32[m]; state_in, state_out: F32[Hv, Dk, Dv];
// o: F32[m, Hv*Dv].
void gdn_core(Encoder& enc, const GdnDims& d, const Tensor& qkv, const Tensor& a, const Tensor& b, const Tensor& A,
              const Tensor& dt_bias, const Tensor& nodes, const Tensor& parents, const Tensor& state_in,
              const Tensor& state_out, const Tensor& o);

}  // namespace eyas::ops
