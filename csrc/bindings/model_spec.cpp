#include "bindings/model_spec.h"

#include "bindings/arrays.h"
#include "bindings/convert.h"
#include "bindings/registry.h"

namespace eyas::bind {

namespace {

nb::handle item(const char* op, nb::dict d, const char* key) {
  if (!d.contains(key)) fail(op, std::string("spec: missing key '") + key + "'");
  return d[key];
}

template <typename T>
T get(const char* op, nb::dict d, const char* key) {
  T out;
  if (!nb::try_cast<T>(item(op, d, key), out)) fail(op, std::string("spec: '") + key + "' has the wrong type");
  return out;
}

}  // namespace

model::ModelSpec parse_model_spec(const char* op, nb::dict d) {
  model::ModelSpec s;
  s.arch = get<std::string>(op, d, "arch");
  s.vocab_size = get<int>(op, d, "vocab_size");
  s.hidden_size = get<int>(op, d, "hidden_size");
  s.num_layers = get<int>(op, d, "num_layers");
  s.num_heads = get<int>(op, d, "num_heads");
  s.num_kv_heads = get<int>(op, d, "num_kv_heads");
  s.head_dim = get<int>(op, d, "head_dim");
  s.intermediate_size = get<int>(op, d, "intermediate_size");
  s.rms_eps = get<float>(op, d, "rms_eps");
  std::string style = get<std::string>(op, d, "rope_style");
  if (style == "neox")
    s.rope_style = ops::RopeStyle::NeoX;
  else if (style == "interleaved")
    s.rope_style = ops::RopeStyle::Interleaved;
  else
    fail(op, "spec: rope_style must be 'neox' or 'interleaved', got '" + style + "'");
  s.rot_dim = get<int>(op, d, "rot_dim");
  nb::object freq = nb::module_::import_("numpy").attr("ascontiguousarray")(item(op, d, "rope_inv_freq"), "float32");
  bind::Array fa;
  if (!nb::try_cast<bind::Array>(freq, fa) || fa.ndim() != 1) fail(op, "spec: rope_inv_freq must be a 1-D float array");
  const float* fp = static_cast<const float*>(fa.data());
  s.rope_inv_freq.assign(fp, fp + fa.shape(0));
  s.qkv_bias = get<bool>(op, d, "qkv_bias");
  s.qk_norm = get<bool>(op, d, "qk_norm");
  s.attn_output_gate = d.contains("attn_output_gate") ? get<bool>(op, d, "attn_output_gate") : false;
  s.tie_embeddings = get<bool>(op, d, "tie_embeddings");
  nb::handle moe = d.contains("moe") ? d["moe"] : nb::none();
  if (!moe.is_none()) {
    nb::dict m;
    if (!nb::try_cast<nb::dict>(moe, m)) fail(op, "spec: 'moe' must be None or a dict");
    s.has_moe = true;
    s.moe.num_experts = get<int>(op, m, "num_experts");
    s.moe.top_k = get<int>(op, m, "top_k");
    s.moe.norm_topk_prob = get<bool>(op, m, "norm_topk_prob");
    s.moe.expert_intermediate_size = get<int>(op, m, "expert_intermediate_size");
    s.moe.shared_expert_intermediate_size =
        m.contains("shared_expert_intermediate_size") ? get<int>(op, m, "shared_expert_intermediate_size") : 0;
    s.moe.shared_expert_gate = m.contains("shared_expert_gate") ? get<bool>(op, m, "shared_expert_gate") : false;
  }
  nb::handle gdn = d.contains("gdn") ? d["gdn"] : nb::none();
  if (!gdn.is_none()) {
    nb::dict g;
    if (!nb::try_cast<nb::dict>(gdn, g)) fail(op, "spec: 'gdn' must be None or a dict");
    s.gdn.num_k_heads = get<int>(op, g, "num_k_heads");
    s.gdn.num_v_heads = get<int>(op, g, "num_v_heads");
    s.gdn.k_head_dim = get<int>(op, g, "k_head_dim");
    s.gdn.v_head_dim = get<int>(op, g, "v_head_dim");
    s.gdn.conv_kernel = get<int>(op, g, "conv_kernel");
    if (g.contains("l2_eps")) s.gdn.l2_eps = get<float>(op, g, "l2_eps");
    if (g.contains("tiled_heads")) s.gdn.tiled_heads = get<bool>(op, g, "tiled_heads");
  }
  nb::handle layers = d.contains("layers") ? d["layers"] : nb::none();
  if (!layers.is_none()) {
    nb::list blocks;
    if (!nb::try_cast<nb::list>(layers, blocks)) fail(op, "spec: 'layers' must be None or a list of dicts");
    for (nb::handle b : blocks) {
      nb::dict block;
      if (!nb::try_cast<nb::dict>(b, block)) fail(op, "spec: 'layers' must be None or a list of dicts");
      s.layers.push_back({get<std::string>(op, block, "mixer"), get<std::string>(op, block, "ffn")});
    }
  }
  return s;
}


model::WeightMap parse_weights(const char* op, nb::dict weights) {
  model::WeightMap w;
  for (auto [k, v] : weights) {
    std::string name;
    if (!nb::try_cast<std::string>(k, name)) fail(op, "weight names must be strings");
    w[name] = parse_weight(op, name, v);
  }
  return w;
}

}  // namespace eyas::bind
