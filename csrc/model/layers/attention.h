// The attention kind: pre-norm multi-head attention with GQA over the layer's own KV cache.
// Options from the spec: q/k/v bias (qwen2), per-head q/k RMSNorm before rope (qwen3), a gated
// output (attn_q gives [q | gate] per head; out = attn * sigmoid(gate)); fused q|k|v matmul.
#pragma once
#include <memory>

#include "model/layer.h"

namespace eyas::model {

// The kind's builder, listed in layers/registry.cpp.
std::unique_ptr<Layer> build_attention(const LayerInit& init);

}  // namespace eyas::model
