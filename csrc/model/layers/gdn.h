// The gdn kind: a Gated DeltaNet mixer (Qwen3.5's linear-attention layers, reference/qwen35_hybrid.md
// §3b) with its recurrent LayerState. Weights (canonical names): attn_norm, attn_qkv [C, H],
// attn_gate [Hv*Dv, H], ssm_beta, ssm_alpha [Hv, H], ssm_conv1d [C, K], ssm_dt.bias [Hv],
// ssm_a [Hv] (= -exp(A_log)), ssm_norm [Dv], ssm_out [H, Hv*Dv]; value heads grouped by key head
// (HF) or tiled (GGUF), as spec.gdn.tiled_heads says.
#pragma once
#include <memory>

#include "model/layer.h"

namespace eyas::model {

// The kind's builder, listed in layers/registry.cpp.
std::unique_ptr<Layer> build_gdn(const LayerInit& init);

}  // namespace eyas::model
