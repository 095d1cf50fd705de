#include "model/spec.h"

namespace eyas::model {

static void require(bool ok, const std::string& msg) {
  if (!ok) fail("Transformer", "spec: " + msg);
}

void validate_spec(const ModelSpec& s) {
  static const char* kArchs[] = {"llama", "qwen2", "qwen3", "qwen3_moe", "qwen35", "qwen35moe", "qwen3next"};
  std::string known;
  bool found = false;
  for (const char* a : kArchs) found |= s.arch == a, known += (known.empty() ? "" : ", ") + std::string(a);
  require(found, "unknown arch '" + s.arch + "' (" + known + ")");
  require(s.vocab_size > 0, "vocab_size must be > 0");
  require(s.hidden_size > 0, "hidden_size must be > 0");
  require(s.num_layers > 0, "num_layers must be > 0");
  require(s.num_heads > 0 && s.num_kv_heads > 0, "num_heads and num_kv_heads must be > 0");
  require(s.num_heads % s.num_kv_heads == 0, "num_heads must be a multiple of num_kv_heads");
  require(s.head_dim > 0, "head_dim must be > 0");
  require(s.rms_eps >= 0.0f, "rms_eps must be >= 0");
  require(s.rot_dim > 0 && s.rot_dim % 2 == 0 && s.rot_dim <= s.head_dim,
          "rot_dim must be even and in (0, head_dim], got " + std::to_string(s.rot_dim));
  require(int(s.rope_inv_freq.size()) == s.rot_dim / 2, "rope_inv_freq must have rot_dim/2 = " +
                                                             std::to_string(s.rot_dim / 2) + " entries, got " +
                                                             std::to_string(s.rope_inv_freq.size()));
  if (s.has_moe) {
    const MoeSpec& m = s.moe;
    require(m.num_experts > 0, "moe.num_experts must be > 0");
    require(m.top_k > 0 && m.top_k <= m.num_experts, "moe.top_k must be in [1, num_experts]");
    require(m.expert_intermediate_size > 0, "moe.expert_intermediate_size must be > 0");
    require(m.shared_expert_intermediate_size >= 0, "moe.shared_expert_intermediate_size must be >= 0");
    require(!m.shared_expert_gate || m.shared_expert_intermediate_size > 0,
            "moe.shared_expert_gate needs a shared expert");
  } else {
    require(s.intermediate_size > 0, "intermediate_size must be > 0");
  }
  require(s.layers.empty() || int(s.layers.size()) == s.num_layers,
          "layers must list num_layers = " + std::to_string(s.num_layers) + " blocks, got " +
              std::to_string(s.layers.size()));
  bool any_gdn = false;
  for (const BlockSpec& b : s.layers) any_gdn |= b.mixer == "gdn";
  if (any_gdn) {
    const GdnSpec& g = s.gdn;
    require(g.num_k_heads > 0 && g.num_v_heads > 0 && g.k_head_dim > 0 && g.v_head_dim > 0,
            "gdn head counts and dims must be > 0");
    require(g.num_v_heads % g.num_k_heads == 0, "gdn.num_v_heads must be a multiple of gdn.num_k_heads");
    require(g.conv_kernel >= 2, "gdn.conv_kernel must be >= 2");
    require(g.l2_eps >= 0.0f, "gdn.l2_eps must be >= 0");
  }
}

std::vector<BlockSpec> resolve_layers(const ModelSpec& s, const WeightMap& w) {
  if (!s.layers.empty()) return s.layers;
  std::vector<BlockSpec> out(size_t(s.num_layers));
  for (int i = 0; i < s.num_layers; ++i)
    if (s.has_moe && w.count("blk." + std::to_string(i) + ".ffn_gate_inp")) out[i].ffn = "moe_ffn";
  return out;
}

}  // namespace eyas::model
