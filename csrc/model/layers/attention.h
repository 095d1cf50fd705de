// The attention kind: pre-norm multi-head attention with GQA over the layer's own KV cache.
// Options from the spec: q/k/v bias (qwen2), per-head q/k RMSNorm before rope (qwen3), a gated
// output (attn_q gives [q | gate] per head; out = attn * sigmoid(gate)); fused q|k|v matmul.
#pragma once
#include <memory>

#include "model/layer.h"

namespace eyas::model {

class Attention : public Layer {
 public:
  explicit Attention(const LayerInit& init);
  std::unique_ptr<Workspace> make_workspace() const override;
  void join(Workspace& ws) const override;
  std::unique_ptr<LayerState> make_state(const StateInit& init) const override;
  // Writes the chunk's K/V at slots slot0.. of its KVCache, attends over prefix + visible new slots.
  void encode(Encoder& enc, const Chunk& c, Workspace& ws, LayerState* state) const override;

 private:
  const ModelSpec& spec_;  // owned by the Transformer, which outlives its layers
  Tensor attn_norm_, wq_, wk_, wv_, bq_, bk_, bv_, q_norm_, k_norm_, wo_;
  Tensor wqkv_, bqkv_;  // fused q|k|v (when fuse and the three share a type)
};

std::unique_ptr<Layer> build_attention(const LayerInit& init);

}  // namespace eyas::model
