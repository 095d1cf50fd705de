// Mixture-of-experts feed-forward (Qwen3-MoE style): router softmax -> top-k experts per token,
// optional renormalisation of the k weights, SiLU-gated expert MLPs, weighted sum.
#pragma once
#include "core/encoder.h"

namespace eyas::ops {

// x: F32[T, H] (normed hidden); router_logits: F32[T, E];
// gate_exps, up_exps: [E, Ie, H] and down_exps: [E, H, Ie], any matmul weight type; y: F32[T, H].
// Experts are combined in rank order (highest weight first), so a row's bits never depend on T.
void moe_ffn(Encoder& enc, const Tensor& x, const Tensor& router_logits, const Tensor& gate_exps,
             const Tensor& up_exps, const Tensor& down_exps, int top_k, bool norm_topk_prob, const Tensor& y);

// Routing alone, for tests: idx I32[T, k] and weights F32[T, k] of the chosen experts.
void moe_route(Encoder& enc, const Tensor& router_logits, int top_k, bool norm_topk_prob, const Tensor& idx,
               const Tensor& weights);

}  // namespace eyas::ops
