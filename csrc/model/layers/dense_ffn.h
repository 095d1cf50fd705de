// The dense FFN kind: pre-norm SwiGLU, x += down(silu(gate(xn)) * up(xn)); gate|up fused into
// one matmul when their types match. Stateless.
#pragma once
#include <memory>

#include "model/layer.h"

namespace eyas::model {

class DenseFfn : public Layer {
 public:
  explicit DenseFfn(const LayerInit& init);
  std::unique_ptr<Workspace> make_workspace() const override;
  void join(Workspace& ws) const override;
  void encode(Encoder& enc, const Chunk& c, Workspace& ws, LayerState* state) const override;

 private:
  float eps_;
  int64_t inter_;  // I
  Tensor ffn_norm_, gate_, up_, down_;
  Tensor wgu_;  // fused gate|up (optional)
};

std::unique_ptr<Layer> build_dense_ffn(const LayerInit& init);

}  // namespace eyas::model
