// ModelSpec: the architecture description Python builds from a GGUF or HF config
// (docs/model_spec.md). Plain data; Transformer validates it against the weights.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ops/rope.h"

namespace eyas::model {

struct MoeSpec {
  int num_experts = 0;
  int top_k = 0;
  bool norm_topk_prob = false;
  int expert_intermediate_size = 0;
  int shared_expert_intermediate_size = 0;  // 0 = no shared expert
  bool shared_expert_gate = false;
};

// Gated DeltaNet sizes (reference/qwen35_hybrid.md §1): key heads Hk, value heads Hv (a multiple of
// Hk), head dims Dk, Dv, conv kernel K.
struct GdnSpec {
  int num_k_heads = 0, num_v_heads = 0, k_head_dim = 0, v_head_dim = 0, conv_kernel = 0;
  float l2_eps = 1e-6f;  // q/k l2-norm epsilon (transformers: 1e-6; llama.cpp: rms_eps)
  bool tiled_heads = false;  // value heads in llama.cpp's tiled order (GGUF) instead of grouped (HF)
};

// The layer kinds of one decoder block (layers/registry.cpp lists the kinds).
struct BlockSpec {
  std::string mixer = "attention";  // token mixing: "attention" | "gdn"
  std::string ffn = "dense_ffn";    // "dense_ffn" | "moe_ffn"
};

struct ModelSpec {
  std::string arch;  // "llama" | "qwen2" | "qwen3" | "qwen3_moe" | "qwen35" | "qwen35moe" | "qwen3next"
  int vocab_size = 0, hidden_size = 0, num_layers = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0;
  int intermediate_size = 0;
  float rms_eps = 1e-6f;
  ops::RopeStyle rope_style = ops::RopeStyle::NeoX;
  int rot_dim = 0;
  std::vector<float> rope_inv_freq;  // [rot_dim / 2]
  bool qkv_bias = false, qk_norm = false, attn_output_gate = false;
  bool has_moe = false;
  MoeSpec moe;
  GdnSpec gdn;  // used by "gdn" mixers
  bool tie_embeddings = false;
  std::vector<BlockSpec> layers;  // [num_layers]; empty = derived from the weights (resolve_layers)
};

using WeightMap = std::map<std::string, Tensor>;

// Throws std::invalid_argument "[Transformer] ..." for inconsistent sizes.
void validate_spec(const ModelSpec& s);

// The spec's per-block layer kinds, or when it lists none: attention + dense FFN, with a MoE FFN
// where the spec has MoE and blk.{i}.ffn_gate_inp exists (Qwen3-MoE's mlp_only_layers are dense).
std::vector<BlockSpec> resolve_layers(const ModelSpec& s, const WeightMap& w);

}  // namespace eyas::model
