// _core.Transformer: the target model, layers of registered kinds over their states (contract: docs/model_spec.md).
#include <nanobind/stl/shared_ptr.h>

#include <cstring>

#include "bindings/arrays.h"
#include "bindings/model_advance.h"
#include "bindings/convert.h"
#include "bindings/model_spec.h"
#include "bindings/registry.h"
#include "model/transformer.h"
#include "model/weights.h"

using model::Transformer;

namespace {

const char* kOp = "Transformer";

// int32 values from an int array or a sequence of Python ints; values outside int32 become
// `bad`, which the caller's range checks reject (-1 for ids and indices; parents take -1 as a root).
std::vector<int32_t> ints(const char* op, const char* name, nb::handle h, int32_t bad = -1) {
  std::vector<int64_t> v;
  bind::Array a;
  if (nb::try_cast<bind::Array>(h, a)) {
    if (a.ndim() != 1) fail(op, std::string(name) + " must be 1-D");
    if (a.dtype() == nb::dtype<int32_t>()) {
      const int32_t* p = static_cast<const int32_t*>(a.data());
      return std::vector<int32_t>(p, p + a.shape(0));
    }
    if (a.dtype() != nb::dtype<int64_t>()) fail(op, std::string(name) + " must be an int32 or int64 array");
    const int64_t* p = static_cast<const int64_t*>(a.data());
    v.assign(p, p + a.shape(0));
  } else if (!nb::try_cast<std::vector<int64_t>>(h, v)) {
    fail(op, std::string(name) + " must be a 1-D int array or a sequence of ints");
  }
  std::vector<int32_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    out[i] = (v[i] < INT32_MIN || v[i] > INT32_MAX) ? bad : int32_t(v[i]);
  }
  return out;
}

// A forward's input parsed from Python; `in` points into the vectors, so keep the object in place.
struct ParsedInput {
  model::ForwardInput in;
  std::vector<int32_t> tok, dep, par;
  std::vector<uint8_t> msk;
  ParsedInput() = default;
  ParsedInput(const ParsedInput&) = delete;
};

void parse_input(const char* op, ParsedInput& p, nb::handle tokens, std::optional<nb::handle> mask,
                 std::optional<nb::handle> depths, std::optional<nb::handle> parents, const std::string& logits,
                 bool capture_aux) {
  model::ForwardInput& in = p.in;
  p.tok = ints(op, "tokens", tokens);
  in.tokens = p.tok.data();
  in.T = int(p.tok.size());
  if (mask && !mask->is_none()) {
    bind::Array a;
    if (!nb::try_cast<bind::Array>(*mask, a) ||
        !(a.dtype() == nb::dtype<uint8_t>() || a.dtype() == nb::dtype<bool>()))
      fail(op, "mask must be a uint8 or bool numpy array");
    if (a.ndim() != 2 || int64_t(a.shape(0)) != in.T || int64_t(a.shape(1)) != in.T)
      fail(op, "mask must be [T, T] with T = " + std::to_string(in.T));
    p.msk.assign(static_cast<const uint8_t*>(a.data()), static_cast<const uint8_t*>(a.data()) + a.nbytes());
    in.mask = p.msk.data();
  }
  if (depths && !depths->is_none()) {
    p.dep = ints(op, "depths", *depths);
    if (int(p.dep.size()) != in.T) fail(op, "depths must have T = " + std::to_string(in.T) + " entries");
    in.depths = p.dep.data();
  }
  if (parents && !parents->is_none()) {
    p.par = ints(op, "parents", *parents, INT32_MIN);
    if (int(p.par.size()) != in.T) fail(op, "parents must have T = " + std::to_string(in.T) + " entries");
    in.parents = p.par.data();
  }
  if (logits == "last")
    in.logits = model::LogitsMode::Last;
  else if (logits == "all")
    in.logits = model::LogitsMode::All;
  else if (logits == "none")
    in.logits = model::LogitsMode::None;
  else if (logits == "argmax")
    in.logits = model::LogitsMode::Argmax;
  else if (logits == "argmax_all")
    in.logits = model::LogitsMode::ArgmaxAll;
  else
    fail(op, "logits must be 'last', 'all', 'none', 'argmax' or 'argmax_all', got '" + logits + "'");
  in.capture_aux = capture_aux;
}

nb::dict result_dict(const model::ForwardResult& r, const model::ForwardInput& in) {
  nb::dict out;
  if (r.logits.defined()) out["logits"] = bind::to_numpy(r.logits);
  if (r.aux.defined()) out["aux"] = bind::to_numpy(r.aux);
  if (in.logits == model::LogitsMode::Argmax) out["argmax"] = r.argmax;
  if (in.logits == model::LogitsMode::ArgmaxAll) out["argmaxes"] = bind::to_numpy(r.argmaxes);
  return out;
}

nb::dict run_forward(Transformer& m, nb::handle tokens, std::optional<nb::handle> mask, std::optional<nb::handle> depths,
                     std::optional<nb::handle> parents, const std::string& logits, bool capture_aux, bool commit_all) {
  ParsedInput p;
  parse_input("forward", p, tokens, mask, depths, parents, logits, capture_aux);
  p.in.commit_all = commit_all;
  model::ForwardResult r;
  {
    nb::gil_scoped_release release;
    r = m.forward(p.in);
  }
  return result_dict(r, p.in);
}

// items: one dict per sequence: target (a Transformer), tokens, and optionally mask, depths,
// parents, logits, capture_aux as forward() takes them.
nb::list run_forward_batch(Transformer& m, nb::list items) {
  const char* op = "forward_batch";
  std::vector<std::unique_ptr<ParsedInput>> parsed;
  std::vector<Transformer*> seqs;
  for (nb::handle item : items) {
    nb::dict d;
    if (!nb::try_cast<nb::dict>(item, d)) fail(op, "each item must be a dict");
    for (auto [k, v] : d) {
      std::string key;
      nb::try_cast<std::string>(k, key);
      if (key != "target" && key != "tokens" && key != "mask" && key != "depths" && key != "parents" && key != "logits" &&
          key != "capture_aux" && key != "commit_all")
        fail(op, "unknown item key '" + key + "'");
    }
    Transformer* t = nullptr;
    if (!d.contains("target") || !nb::try_cast<Transformer*>(d["target"], t) || !t)
      fail(op, "each item needs 'target', a Transformer");
    if (!d.contains("tokens")) fail(op, "each item needs 'tokens'");
    auto opt = [&](const char* k) { return d.contains(k) ? std::optional<nb::handle>(d[k]) : std::nullopt; };
    std::string logits = "last";
    if (d.contains("logits") && !nb::try_cast<std::string>(d["logits"], logits)) fail(op, "logits must be a str");
    bool aux = false;
    if (d.contains("capture_aux") && !nb::try_cast<bool>(d["capture_aux"], aux)) fail(op, "capture_aux must be a bool");
    bool commit_all = false;
    if (d.contains("commit_all") && !nb::try_cast<bool>(d["commit_all"], commit_all)) fail(op, "commit_all must be a bool");
    parsed.push_back(std::make_unique<ParsedInput>());
    parse_input(op, *parsed.back(), d["tokens"], opt("mask"), opt("depths"), opt("parents"), logits, aux);
    parsed.back()->in.commit_all = commit_all;
    seqs.push_back(t);
  }
  std::vector<model::ForwardInput> ins;
  for (auto& p : parsed) ins.push_back(p->in);
  std::vector<model::ForwardResult> rs;
  {
    nb::gil_scoped_release release;
    rs = m.forward_batch(seqs, ins);
  }
  nb::list out;
  for (size_t i = 0; i < rs.size(); ++i) out.append(result_dict(rs[i], ins[i]));
  return out;
}

}  // namespace

EYAS_BINDINGS(model_transformer) {
  m.def("_fused_copy_bytes", &model::fused_copy_bytes,
        "Bytes of fused q|k|v and gate|up weights copied so far in this process (parts adjacent in memory are\n"
        "viewed in place and cost none).");
  nb::class_<Transformer>(m, "Transformer",
                          "Target model: layers of registered kinds over their per-sequence states (the KV cache for\n"
                          "attention): forward (prefill, decode, tree verify), commit, truncate.")
      .def(
          "__init__",
          [](Transformer* self, nb::dict spec, nb::dict weights, int max_context, std::optional<std::vector<int>> aux_layers,
             std::shared_ptr<Device> device, int chunk, bool fuse, const std::string& kv_dtype) {
            if (kv_dtype != "f32" && kv_dtype != "f16") fail(kOp, "kv_dtype must be 'f32' or 'f16', got '" + kv_dtype + "'");
            model::ModelSpec s = bind::parse_model_spec(kOp, spec);
            model::WeightMap w = bind::parse_weights(kOp, weights);
            std::vector<int> aux;
            if (aux_layers) {
              aux = *aux_layers;
            } else if (s.num_layers >= 4) {
              aux = {2, s.num_layers / 2, s.num_layers - 3};  // EAGLE-3's capture layers
            }
            new (self) Transformer(std::move(s), std::move(w), max_context, std::move(aux),
                                   device ? device : bind::default_device(), chunk, fuse,
                                   kv_dtype == "f16" ? DType::F16 : DType::F32);
          },
          "spec"_a, "weights"_a, nb::kw_only(), "max_context"_a = 4096, "aux_layers"_a = nb::none(),
          "device"_a = nb::none(), "chunk"_a = 256, "fuse"_a = true, "kv_dtype"_a = "f32",
          "spec/weights: docs/model_spec.md. aux_layers default to EAGLE-3's [2, L//2, L-3].\n"
          "chunk: rows per prefill step. fuse: one matmul for q|k|v and for gate|up (a weight copy; same bits).\n"
          "kv_dtype: 'f32' or 'f16' (the KV cache in half precision: half the bytes attention reads).")
      .def("forward_batch", &run_forward_batch, "items"_a,
           "One forward over several sequences' rows with this model's weights (continuous batching).\n"
           "items: one dict per sequence: target (a Transformer built from the same weights), tokens, and\n"
           "optionally mask, depths, parents, logits, capture_aux, commit_all as forward() takes them. Returns one\n"
           "result dict per item, bit-identical to that target's own forward(); each target commits on its own\n"
           "unless its item sets commit_all.")
      .def(
          "forward",
          [](Transformer& m, nb::handle tokens, std::optional<nb::handle> mask, std::optional<nb::handle> depths,
             const std::string& logits, bool capture_aux, std::optional<nb::handle> parents, bool commit_all) {
            return run_forward(m, tokens, mask, depths, parents, logits, capture_aux, commit_all);
          },
          "tokens"_a, nb::kw_only(), "mask"_a = nb::none(), "depths"_a = nb::none(), "logits"_a = "last",
          "capture_aux"_a = false, "parents"_a = nb::none(), "commit_all"_a = false,
          "Run T tokens after the committed prefix (causal, or a tree under mask at positions length+depths).\n"
          "parents (int[T], -1 = a root) gives the tree instead of mask; a mask must be a tree's ancestor mask.\n"
          "Writes their K/V at slots [length, length+T) without committing. Returns {'logits', 'aux'}.\n"
          "logits='argmax' returns {'argmax': int} instead of logits: the last row's greedy token (first\n"
          "index of the maximum, NaN ignored), without copying the logits out; 'argmax_all' returns\n"
          "{'argmaxes': int32[T]}, every row's (what a greedy verify needs).\n"
          "commit_all=True (causal only) commits every row as the forward ends, as prefill() does.")
      .def(
          "commit",
          [](Transformer& m, nb::handle nodes) {
            std::vector<int32_t> v = ints("commit", "nodes", nodes);
            nb::gil_scoped_release release;
            m.commit(v);
          },
          "nodes"_a, "Keep rows length+nodes[j] of the last forward at slot length+j; length += len(nodes).")
      .def(
          "prefill",
          [](Transformer& m, nb::handle tokens, const std::string& logits, bool capture_aux) {
            return run_forward(m, tokens, std::nullopt, std::nullopt, std::nullopt, logits, capture_aux, true);
          },
          "tokens"_a, nb::kw_only(), "logits"_a = "last", "capture_aux"_a = false,
          "forward(tokens) + commit(arange(T)) in one call; a recurrent layer updates its state in place (no\n"
          "working copy). Should that fail part way, the sequence is reset to length 0.")
      .def(
          "decode",
          [](Transformer& m, int64_t token, const std::string& logits, bool capture_aux) {
            std::vector<int64_t> t{token};
            return run_forward(m, nb::cast(t), std::nullopt, std::nullopt, std::nullopt, logits, capture_aux, true);
          },
          "token"_a, nb::kw_only(), "logits"_a = "last", "capture_aux"_a = false,
          "forward([token]) + commit([0]) in one call, as prefill.")
      .def("advance", &bind::advance, "tokens"_a, "parents"_a, nb::kw_only(), "temperature"_a = 0.0f, "top_k"_a = 0,
           "top_p"_a = 1.0f, "rng"_a = nb::none(), "capture_aux"_a = false, "top"_a = false,
           "A speculative round in one call: forward the draft tree tokens / parents (int32[N], parents[0] = -1,\n"
           "every other parent an earlier node), accept it as speculative.accept does from these rows (greedy,\n"
           "or the sampled draws on rng), commit the accepted path. One node is a plain step (decode). Returns\n"
           "{'path', 'tokens'}, with capture_aux the path's rows of the captured features ('aux'), and with top\n"
           "(one node only) the row's largest probability after the filters ('top', 1 when greedy).")
      .def("truncate", &Transformer::truncate, "length"_a,
           "Drop committed tokens beyond `length` (with recurrent layers: a length `truncatable` gives).")
      .def("truncatable", &Transformer::truncatable, "length"_a,
           "The longest length <= `length` that truncate accepts: `length` itself unless a recurrent (gdn)\n"
           "layer keeps no history there (it keeps the current length, 0, and with prefill_checkpoints on the\n"
           "end of the last prefill).")
      .def("reset", &Transformer::reset, "Forget every token.")
      .def_prop_rw("prefill_checkpoints", &Transformer::prefill_checkpoints, &Transformer::set_prefill_checkpoints,
                   "Recurrent (gdn) layers keep a copy of their state at the end of each prefill, so truncate can\n"
                   "return there (prompt caching, chat turns). Off by default: the copy is not held.")
      .def_prop_ro("length", &Transformer::length, "Committed tokens.")
      .def_prop_ro("capacity", &Transformer::capacity, "Maximum tokens (max_context).")
      .def_prop_ro("pending", &Transformer::pending, "Rows the last forward wrote that commit() may keep.")
      .def_prop_ro("kv_dtype", [](Transformer& m) { return m.kv_dtype() == DType::F16 ? "f16" : "f32"; },
                   "KV cache precision: 'f32' or 'f16'.")
      .def_prop_ro("state_bytes", &Transformer::state_bytes,
                   "Bytes a snapshot of every layer's state holds at the committed length (K/V rows for attention).")
      .def_prop_ro("held_state_bytes", &Transformer::held_state_bytes,
                   "Bytes every layer's state has allocated now: the K/V cache for max_context, and for recurrent\n"
                   "layers the committed state plus any working copy, prefill checkpoint and kept tree rows.")
      .def_prop_ro("weight_bytes", &Transformer::weight_bytes,
                   "Bytes of the weights a decode step reads whole (all but the untied token embedding).")
      .def_prop_ro("layer_kinds", &Transformer::layer_kinds, "Kind of every layer in order: mixer, FFN per block.")
      .def(
          "layer_state",
          [](Transformer& m, int index) {
            nb::dict out;
            for (auto& [name, t] : m.layer_state(index)) out[name.c_str()] = bind::to_numpy(t).attr("copy")();
            return out;
          },
          "index"_a,
          "Layer `index`'s (layer_kinds order) committed state as copies: gdn {'conv': F32[K-1, C] (oldest row\n"
          "first), 'recurrent': F32[Hv, Dk, Dv]}; {} for kinds without a fixed-size state.")
      .def_prop_ro("aux_layers", &Transformer::aux_layers)
      .def_prop_ro("vocab_size", [](Transformer& m) { return m.spec().vocab_size; })
      .def_prop_ro("hidden_size", [](Transformer& m) { return m.spec().hidden_size; })
      .def_prop_ro("num_layers", [](Transformer& m) { return m.spec().num_layers; })
      .def_prop_ro("num_threads", [](Transformer& m) { return m.device().num_threads(); });
}
