// The MoE FFN kind: pre-norm router, top-k SwiGLU experts (ops::moe_ffn), and an optional shared
// expert whose output is optionally scaled by sigmoid(gate(xn)) (Qwen2-MoE). Stateless.
#pragma once
#include <memory>

#include "model/layer.h"

namespace eyas::model {

class MoeFfn : public Layer {
 public:
  explicit MoeFfn(const LayerInit& init);
  std::unique_ptr<Workspace> make_workspace() const override;
  void encode(Encoder& enc, const Chunk& c, Workspace& ws, LayerState* state) const override;

 private:
  float eps_;
  MoeSpec moe_;
  int64_t hidden_;
  Tensor ffn_norm_, router_, gate_exps_, up_exps_, down_exps_;
  Tensor gate_shexp_, up_shexp_, down_shexp_, gate_inp_shexp_;  // shared expert (optional)
};

std::unique_ptr<Layer> build_moe_ffn(const LayerInit& init);

}  // namespace eyas::model
