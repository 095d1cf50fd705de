// _core.speculative.MtpDrafter: the target's own MTP block as a drafter (csrc/speculative/mtp_drafter.h).
#include <nanobind/stl/shared_ptr.h>

#include "bindings/arrays.h"
#include "bindings/model_spec.h"
#include "bindings/registry.h"
#include "speculative/mtp_drafter.h"

using speculative::MtpDrafter;

namespace {
const char* kOp = "MtpDrafter";
}  // namespace

EYAS_BINDINGS(speculative_mtp) {
  nb::module_ s = bind::speculative_module(m);
  nb::class_<MtpDrafter>(s, "MtpDrafter",
                         "The target's multi-token-prediction block as a drafter: eh_proj over the normed\n"
                         "embedding and hidden state, one attention block of the target's kinds, the target's\n"
                         "lm_head; own KV cache.")
      .def(
          "__init__",
          [](MtpDrafter* self, nb::dict spec, nb::dict weights, int block, const std::string& ffn, int max_context) {
            new (self) MtpDrafter(bind::parse_model_spec(kOp, spec), bind::parse_weights(kOp, weights), block, ffn,
                                  max_context, bind::default_device());
          },
          "spec"_a, "weights"_a, nb::kw_only(), "block"_a, "ffn"_a, "max_context"_a = 4096,
          "spec: the target's (docs/model_spec.md); weights: blk.{block}.* (nextn.* and the block's attention and\n"
          "`ffn` kind tensors) plus the target's token_embd, output_norm and output.")
      .def(
          "ingest",
          [](MtpDrafter& d, bind::Array hidden, bind::Array tokens) {
            Tensor h = bind::from_numpy(kOp, "hidden", hidden), t = bind::from_numpy(kOp, "tokens", tokens);
            nb::gil_scoped_release release;
            d.ingest(h, t);
          },
          "hidden"_a, "tokens"_a,
          "Run and commit T pairs: hidden F32[T, H] (the target's final residual, before its output norm, at\n"
          "positions length..), tokens I32[T] (the token after each position).")
      .def(
          "expand",
          [](MtpDrafter& d, int32_t top_k, int32_t depth, int32_t total_tokens) {
            speculative::DraftTree t;
            {
              nb::gil_scoped_release release;
              t = d.expand(speculative::TreePolicy{top_k, depth, total_tokens});
            }
            return bind::tree_dict(t);
          },
          "top_k"_a, "depth"_a, "total_tokens"_a,
          "Draft tree rooted at the last ingested token: dict(tokens, parents, depths, scores, mask).")
      .def("truncate", &MtpDrafter::truncate, "n"_a)
      .def("reset", &MtpDrafter::reset)
      .def_prop_ro("length", &MtpDrafter::length)
      .def_prop_ro("capacity", &MtpDrafter::capacity)
      .def_prop_ro("last_hidden", [](MtpDrafter& d) { return bind::vec_to_numpy(d.last_hidden()); },
                   "The normed output o of the last ingested row (the next depth's h).")
      .def_prop_ro("last_logits", [](MtpDrafter& d) { return bind::vec_to_numpy(d.last_logits()); });
}
