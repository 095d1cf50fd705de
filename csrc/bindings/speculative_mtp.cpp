// _core.speculative.MtpDrafter: the target's own MTP block as a drafter (csrc/speculative/mtp_drafter.h).
#include <nanobind/stl/shared_ptr.h>

#include "bindings/arrays.h"
#include "bindings/model_spec.h"
#include "bindings/registry.h"
#include "bindings/runtime_drafter.h"
#include "speculative/mtp_drafter.h"

using speculative::MtpDrafter;

namespace {
const char* kOp = "MtpDrafter";
}  // namespace

EYAS_BINDINGS(speculative_mtp) {
  nb::module_ s = bind::speculative_module(m);
  nb::class_<MtpDrafter> cls(s, "MtpDrafter",
                         "The target's multi-token-prediction block as a drafter: eh_proj over the normed\n"
                         "embedding and hidden state, one attention block of the target's kinds, the target's\n"
                         "lm_head; own KV cache.");
  cls.def(
          "__init__",
          [](MtpDrafter* self, nb::dict spec, nb::dict weights, int block, const std::string& ffn, int max_context) {
            new (self) MtpDrafter(bind::parse_model_spec(kOp, spec), bind::parse_weights(kOp, weights), block, ffn,
                                  max_context, bind::default_device());
          },
          "spec"_a, "weights"_a, nb::kw_only(), "block"_a, "ffn"_a, "max_context"_a = 4096,
          "spec: the target's (docs/model_spec.md); weights: blk.{block}.* (nextn.* and the block's attention and\n"
          "`ffn` kind tensors) plus the target's token_embd, output_norm and output.");
  bind::def_runtime_drafter(cls, kOp, "hidden",
                            "Run and commit T pairs: hidden F32[T, H] (the target's final residual, before its output "
                            "norm, at\npositions length..), tokens I32[T] (the token after each position).",
                            "The normed output o of the last ingested row (the next depth's h).");
}
