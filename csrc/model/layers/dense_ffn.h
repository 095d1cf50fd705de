// The dense FFN kind: pre-norm SwiGLU, x += down(silu(gate(xn)) * up(xn)); gate|up fused into
// one matmul when their types match. Stateless.
#pragma once
#include <memory>

#include "model/layer.h"

namespace eyas::model {

// The kind's builder, listed in layers/registry.cpp.
std::unique_ptr<Layer> build_dense_ffn(const LayerInit& init);

}  // namespace eyas::model
