// The MoE FFN kind: pre-norm router, top-k SwiGLU experts (ops::moe_ffn), and an optional shared
// expert whose output is optionally scaled by sigmoid(gate(xn)) (Qwen2-MoE). Stateless.
#pragma once
#include <memory>

#include "model/layer.h"

namespace eyas::model {

// The kind's builder, listed in layers/registry.cpp.
std::unique_ptr<Layer> build_moe_ffn(const LayerInit& init);

}  // namespace eyas::model
