// _core.speculative.HydraDrafter: Hydra++ heads over a prefix attention block (csrc/speculative/hydra_drafter.h).
#include <nanobind/stl/shared_ptr.h>

#include "bindings/arrays.h"
#include "bindings/model_spec.h"
#include "bindings/registry.h"
#include "bindings/runtime_drafter.h"
#include "speculative/hydra_drafter.h"

using speculative::HydraDrafter;

namespace {
const char* kOp = "HydraDrafter";
}  // namespace

EYAS_BINDINGS(speculative_hydra) {
  nb::module_ s = bind::speculative_module(m);
  nb::class_<HydraDrafter> cls(
      s, "HydraDrafter",
      "Hydra++ drafter: one prefix attention block over the target's normed final state\n"
      "(own KV cache), then N sequentially dependent MLP heads, head i drafting depth i+1\n"
      "from [prefix output | E(root) | E(drafted tokens)]; draft-vocab lm_head mapped by d2t.");
  cls.def(
      "__init__",
      [](HydraDrafter* self, nb::dict spec, nb::dict weights, std::optional<bind::Array> d2t, int num_heads,
         int head_layers, int max_context) {
        std::vector<int32_t> map;
        if (d2t) {
          Tensor t = bind::typed(kOp, "d2t", *d2t, DType::I32, 1);
          map.assign(t.data<int32_t>(), t.data<int32_t>() + t.dim(0));
        }
        new (self) HydraDrafter(bind::parse_model_spec(kOp, spec), bind::parse_weights(kOp, weights), std::move(map),
                                num_heads, head_layers, max_context, bind::default_device());
      },
      "spec"_a, "weights"_a, "d2t"_a.none(), nb::kw_only(), "num_heads"_a, "head_layers"_a, "max_context"_a = 4096,
      "spec: the prefix block's (docs/model_spec.md: the target's sizes, one attention + dense_ffn block);\n"
      "weights: blk.0.* of that block, the target's token_embd and output_norm, hydra.prefix_norm,\n"
      "hydra.head.{i}.{proj,in} [H, (i+2)H], hydra.head.{i}.res.{l} [H, H] (l = 1..head_layers-1), hydra.norm,\n"
      "hydra.lm_head [Vd, H]; d2t: int32[Vd] target ids of the draft vocabulary, or None (Vd = V).");
  bind::def_runtime_drafter(cls, kOp, "hidden",
                            "Run and commit T pairs: hidden F32[T, H] (the target's final residual, before its output "
                            "norm, at\npositions length..), tokens I32[T] (the token after each position).",
                            "The root's row [c | E(root) | 0 ...] F32[(num_heads+1)*H] (c: the prefix block's normed "
                            "output).");
}
