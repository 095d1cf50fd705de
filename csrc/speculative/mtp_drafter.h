// The target's own multi-token-prediction (MTP) block as a drafter: Qwen3.5 / Qwen3-Next checkpoints
// carry one extra full-attention decoder block that predicts the token after next from the target's
// final hidden state h and the embedding of the next token:
//   x = eh_proj [enorm(embed(token)) | hnorm(h)];  x += attention(x); x += ffn(x);
//   o = shared_head_norm(x);  logits = lm_head(o)   (o is the next depth's h).
// For an ingested pair h is the target's final residual after its output norm (as vLLM and SGLang
// feed it). The block's layers are the target's own kinds (model/layers), so its attention, q/k
// norms, output gate and dense or MoE FFN have the target's code; its KV cache holds the committed
// pairs [0, length) plus scratch tree slots after them, as the EAGLE-3 drafter's does.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/encoder.h"
#include "model/layer.h"
#include "model/spec.h"
#include "speculative/runtime_drafter.h"
#include "speculative/tree.h"

namespace eyas::speculative {

class MtpDrafter : public RuntimeDrafter {
 public:
  // spec: the target's; block: the MTP block's index in `weights` (blk.{block}.nextn.{eh_proj, enorm, hnorm,
  // shared_head_norm}, optional nextn.{embed_tokens, shared_head_head}, and the block's attention and
  // `ffn_kind` tensors); token_embd, output_norm and output (unless tied) are the target's.
  MtpDrafter(model::ModelSpec spec, model::WeightMap weights, int block, const std::string& ffn_kind,
             int max_context, std::shared_ptr<Device> device);

  // hidden: F32[T, H] the target's final residual (before its output norm) at positions length..length+T-1;
  // tokens: I32[T] the token after each of them. Runs and commits the T pairs; the last row seeds expand().
  void ingest(const Tensor& hidden, const Tensor& tokens);
  // Tree rooted at the last ingested token (EAGLE-2 expansion); tree K/V goes to scratch slots after `length`.
  DraftTree expand(const TreePolicy& policy);
  // last_hidden(): the normed output o [H]; last_logits(): the logits [V].

 private:
  struct Scratch {
    int rows = 0, logit_rows = 0;
    Tensor ids, pos, e, en, h, hn, u, x, xn, proj, o, logits;
  };
  void ensure_scratch(int rows, int logit_rows);
  // One forward over T rows whose h sits in s_.h (target_h: still to be put through the target's output
  // norm); logits for rows [logit_row0, T).
  void encode_forward(Encoder& enc, int T, bool target_h, int prefix, int slot0, const Tensor& mask, int logit_row0);

  model::ModelSpec spec_;  // the layers keep a reference: it lives as long as they do
  Tensor embd_, target_norm_, enorm_, hnorm_, eh_proj_, head_norm_, lm_head_;
  std::unique_ptr<model::Layer> mixer_, ffn_;
  std::unique_ptr<model::Workspace> mixer_ws_, ffn_ws_;
  std::unique_ptr<model::LayerState> kv_;
  Scratch s_;
};

}  // namespace eyas::speculative
