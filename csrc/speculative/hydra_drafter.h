// Hydra++ as a drafter: N sequentially dependent heads over one shared prefix block. Per committed
// position t (h_t the target's final residual before its output norm, x_{t+1} the token after it):
//   f = rms_norm(h, output_norm);  y = block(f)  (one causal attention + dense-FFN block, own KV cache)
//   c = rms_norm(y, hydra.prefix_norm)
// Head i drafts depth i+1 of a path with root token r and drafted d_1..d_i from u = [c | E(r) | E(d_1..d_i)]:
//   z = c + silu(in_i u);  z += silu(res_{i,l} z) for l = 1..R-1;  logits = lm_head rms_norm(z, norm)
// Only committed pairs go through the prefix block, so tree nodes need no KV slots: a node's state is
// its row [c | E(r) | E(d_1) | ... ] (zeros after the filled blocks), width (N+1)H.
#pragma once
#include <memory>
#include <vector>

#include "core/device.h"
#include "core/encoder.h"
#include "model/layer.h"
#include "model/spec.h"
#include "speculative/runtime_drafter.h"
#include "speculative/tree.h"

namespace eyas::speculative {

class HydraDrafter : public RuntimeDrafter {
 public:
  // spec: the prefix block's (the target's sizes, one attention + dense_ffn block, blk.0.*); weights: the
  // block's, the target's token_embd and output_norm, hydra.{prefix_norm, head.{i}.{in,res.{l}}, norm,
  // lm_head}. d2t: [Vd] absolute target ids of the draft vocabulary (empty = identity, then Vd = V).
  // num_heads N >= 1, head_layers R >= 1 (R - 1 residual blocks per head).
  HydraDrafter(model::ModelSpec spec, model::WeightMap weights, std::vector<int32_t> d2t, int num_heads,
               int head_layers, int max_context, std::shared_ptr<Device> device);

  // hidden: F32[T, H] the target's final residual (before its output norm) at positions length..length+T-1;
  // tokens: I32[T] the token after each of them. Runs and commits the T pairs through the prefix block; the
  // last pair is the root (head 0 gives its logits).
  void ingest(const Tensor& hidden, const Tensor& tokens);
  // Tree rooted at the last ingested token (EAGLE-2 expansion); depth d's children come from head d, so
  // policy.depth <= N.
  DraftTree expand(const TreePolicy& policy);
  // last_hidden(): the root row [c | E(root) | 0 ...] F32[(N+1)H]; last_logits(): head 0's F32[Vd].

 private:
  struct Scratch {
    int block_rows = 0, head_rows = 0;
    Tensor ids, pos, x, xn, proj;    // prefix block: I32[rows], I32[rows], F32[rows, H] x3
    Tensor root_id, c;               // I32[1], F32[1, H]: the root's token and prefix output
    Tensor e, in, out, u;            // heads: F32[rows, H], F32[rows, W] x2, F32[rows * W] (u_l's rows)
    Tensor z, g, ones, zn, logits;   // F32[rows, H] x4, F32[rows, Vd]
  };
  void ensure_scratch(int block_rows, int head_rows);
  // Head i on u F32[F, (i+2)H] (contiguous); its logits go to s_.logits rows [0, F).
  void encode_head(Encoder& enc, int i, int F, const Tensor& u);

  model::ModelSpec spec_;  // the layers keep a reference: it lives as long as they do
  int N_, R_;
  int64_t W_;              // (N+1)H: a node row
  int vd_;
  std::vector<int32_t> d2t_;
  Tensor embd_, target_norm_, prefix_norm_, norm_, lm_head_;
  struct Head {
    Tensor in;               // [H, (i+2)H]
    std::vector<Tensor> res; // R-1 x [H, H]
  };
  std::vector<Head> heads_;
  std::unique_ptr<model::Layer> mixer_, ffn_;
  std::unique_ptr<model::Workspace> mixer_ws_, ffn_ws_;
  std::unique_ptr<model::LayerState> kv_;
  Scratch s_;
};

}  // namespace eyas::speculative
