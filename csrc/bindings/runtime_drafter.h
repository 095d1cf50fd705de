// The Python methods every runtime drafter family has (csrc/speculative/runtime_drafter.h): ingest,
// expand, rollback and the root's state, bound once for each family's class.
#pragma once
#include "bindings/arrays.h"
#include "bindings/registry.h"
#include "speculative/runtime_drafter.h"

namespace eyas::bind {

// features: the name of ingest's first argument; ingest_doc, hidden_doc: its and last_hidden's docstrings.
template <typename D>
void def_runtime_drafter(nb::class_<D>& c, const char* op, const char* features, const char* ingest_doc,
                         const char* hidden_doc) {
  c.def(
       "ingest",
       [op, features](D& d, Array f, Array tokens) {
         Tensor tf = from_numpy(op, features, f), tt = from_numpy(op, "tokens", tokens);
         nb::gil_scoped_release release;
         d.ingest(tf, tt);
       },
       nb::arg(features), "tokens"_a, ingest_doc)
      .def(
          "expand",
          [](D& d, int32_t top_k, int32_t depth, int32_t total_tokens, float min_log_prob) {
            speculative::DraftTree t;
            {
              nb::gil_scoped_release release;
              t = d.expand(speculative::TreePolicy{top_k, depth, total_tokens, min_log_prob});
            }
            return tree_dict(t);
          },
          "top_k"_a, "depth"_a, "total_tokens"_a, "min_log_prob"_a = -INFINITY,
          "Draft tree rooted at the last ingested token: dict(tokens, parents, depths, scores, mask). Nodes "
          "whose cumulative draft log-prob is under min_log_prob are left out, but for the likeliest first token.")
      .def("truncate", &D::truncate, "n"_a)
      .def("reset", &D::reset)
      .def_prop_ro("length", &D::length)
      .def_prop_ro("capacity", &D::capacity)
      .def_prop_ro("last_hidden", [](D& d) { return vec_to_numpy(d.last_hidden()); }, hidden_doc)
      .def_prop_ro("last_logits", [](D& d) { return vec_to_numpy(d.last_logits()); });
}

}  // namespace eyas::bind
