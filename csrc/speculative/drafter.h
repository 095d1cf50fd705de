// EAGLE-3 drafter (reference eagle3.md §3): fc over the target's aux features, one Llama-style
// layer over concat(input_norm(embed), hidden_norm(g)), a draft-vocab head mapped through d2t.
// It owns a KV cache: committed pairs [0, length) plus scratch tree slots after them.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/encoder.h"
#include "speculative/runtime_drafter.h"
#include "speculative/tree.h"

namespace eyas::speculative {

struct DrafterSpec {
  int hidden_size = 0, target_hidden_size = 0, num_aux = 3;
  int num_heads = 0, num_kv_heads = 0, head_dim = 0, intermediate_size = 0;
  int vocab_size = 0, draft_vocab_size = 0, rot_dim = 0;
  float rms_eps = 1e-6f;
  bool norm_before_residual = false;  // residual = hidden_norm(g) instead of g
  bool norm_output = true;            // apply the final norm before lm_head
  std::vector<float> rope_inv_freq;   // [rot_dim / 2]
  // > 0: the head scores the draft vocabulary with a Q4_0 copy of `output` (half the bytes of Q8_0)
  // and recomputes this many best logits of each row from `output` itself. Drafts need not be exact,
  // so only the tree's choices can change, and rarely: the copy's error is far below the gaps that count.
  int rescore_rows = 0;
};

class Eagle3Drafter : public RuntimeDrafter {
 public:
  // weights: fc, fc.bias (optional), hidden_norm, input_norm, attn_{q,k,v,output}, post_norm,
  // ffn_{gate,up,down}, output_norm, output, token_embd; output_coarse (optional, Q4_0 [Vd, H]): the
  // scoring copy of `output` when rescore_rows > 0 (built here from `output` when absent). d2t: [Vd]
  // absolute target ids (empty = identity).
  Eagle3Drafter(DrafterSpec spec, std::map<std::string, Tensor> weights, std::vector<int32_t> d2t,
                int max_context, std::shared_ptr<Device> device);

  // aux: F32[T, num_aux * Ht] target features of positions length..length+T-1; tokens: I32[T] the
  // token after each of them. Runs and commits the T pairs; the last row seeds the next expand().
  void ingest(const Tensor& aux, const Tensor& tokens);
  // Tree rooted at the last ingested token. Tree K/V goes to scratch slots after `length`.
  DraftTree expand(const TreePolicy& policy);

  const DrafterSpec& spec() const { return spec_; }
  // last_hidden(): the pre-norm output [H]; last_logits(): the draft logits [Vd].

 private:
  struct Scratch {
    int rows = 0;
    Tensor ids, pos, g, e, en, gn, u, qkv, q, k, v, o, attn, h1, n, gu, gate, up, down, h2, hn, logits;
  };
  void ensure_scratch(int rows);
  // Encodes one forward over T rows; logits for rows [logit_row0, T).
  void encode_forward(Encoder& enc, int T, const Tensor* aux, int prefix, int slot0, const Tensor& mask,
                      int logit_row0);
  // After a committed forward with L logit rows from activation row logit_row0 on: with a coarse head,
  // the rescore_rows best of each row recomputed from lm_head_ (nothing without one).
  void rescore(int L, int logit_row0);

  DrafterSpec spec_;
  std::vector<int32_t> d2t_;
  int cache_slots_;
  Tensor fc_, fc_bias_, hidden_norm_, input_norm_, wq_, wk_, wv_, wo_, post_norm_, w_gate_, w_up_, w_down_;
  Tensor out_norm_, lm_head_, lm_head_coarse_, embd_, inv_freq_, k_cache_, v_cache_;
  Tensor w_qkv_, w_gate_up_;  // q|k|v and gate|up fused (when each group shares a type), else undefined
  Scratch s_;
};

}  // namespace eyas::speculative
