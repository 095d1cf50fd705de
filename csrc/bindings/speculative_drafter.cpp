// _core.speculative.Eagle3Drafter: the EAGLE-3 drafter with its own KV cache (csrc/speculative/drafter.h).
#include <nanobind/stl/shared_ptr.h>

#include "bindings/arrays.h"
#include "bindings/registry.h"
#include "bindings/runtime_drafter.h"
#include "speculative/drafter.h"

using speculative::Eagle3Drafter;

namespace {

const char* kOp = "Eagle3Drafter";

template <typename T>
T get(nb::dict d, const char* key) {
  if (!d.contains(key)) fail(kOp, std::string("spec: missing key '") + key + "'");
  T out;
  if (!nb::try_cast<T>(d[key], out)) fail(kOp, std::string("spec: '") + key + "' has the wrong type");
  return out;
}

speculative::DrafterSpec parse_spec(nb::dict d) {
  speculative::DrafterSpec s;
  s.hidden_size = get<int>(d, "hidden_size");
  s.target_hidden_size = get<int>(d, "target_hidden_size");
  s.num_aux = get<int>(d, "num_aux");
  s.num_heads = get<int>(d, "num_heads");
  s.num_kv_heads = get<int>(d, "num_kv_heads");
  s.head_dim = get<int>(d, "head_dim");
  s.intermediate_size = get<int>(d, "intermediate_size");
  s.vocab_size = get<int>(d, "vocab_size");
  s.draft_vocab_size = get<int>(d, "draft_vocab_size");
  s.rot_dim = get<int>(d, "rot_dim");
  s.rms_eps = get<float>(d, "rms_eps");
  s.norm_before_residual = get<bool>(d, "norm_before_residual");
  s.norm_output = get<bool>(d, "norm_output");
  if (d.contains("rescore_rows")) s.rescore_rows = get<int>(d, "rescore_rows");
  nb::object freq = nb::module_::import_("numpy").attr("ascontiguousarray")(d["rope_inv_freq"], "float32");
  bind::Array fa;
  if (!nb::try_cast<bind::Array>(freq, fa) || fa.ndim() != 1) fail(kOp, "spec: rope_inv_freq must be a 1-D float array");
  const float* fp = static_cast<const float*>(fa.data());
  s.rope_inv_freq.assign(fp, fp + fa.shape(0));
  return s;
}

}  // namespace

EYAS_BINDINGS(speculative_drafter) {
  nb::module_ s = bind::speculative_module(m);
  nb::class_<Eagle3Drafter> cls(s, "Eagle3Drafter",
                            "EAGLE-3 drafter: fc over target aux features, one layer, draft-vocab head, own KV cache.");
  cls.def(
          "__init__",
          [](Eagle3Drafter* self, nb::dict spec, nb::dict weights, std::optional<bind::Array> d2t, int max_context) {
            std::map<std::string, Tensor> w;
            for (auto [k, v] : weights) {
              std::string name = nb::cast<std::string>(k);
              w[name] = bind::parse_weight(kOp, name, v);
            }
            std::vector<int32_t> map;
            if (d2t) {
              Tensor t = bind::typed(kOp, "d2t", *d2t, DType::I32, 1);
              map.assign(t.data<int32_t>(), t.data<int32_t>() + t.dim(0));
            }
            new (self) Eagle3Drafter(parse_spec(spec), std::move(w), std::move(map), max_context, bind::default_device());
          },
          "spec"_a, "weights"_a, "d2t"_a = nb::none(), nb::kw_only(), "max_context"_a = 4096);
  bind::def_runtime_drafter(cls, kOp, "aux",
                            "Run and commit T pairs: aux F32[T, num_aux*Ht] (target features of positions length..), "
                            "tokens I32[T] (the token after each position).",
                            "The pre-norm output of the last ingested row (the next depth's feature).");
}
