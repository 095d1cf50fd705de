// Bindings for the pure speculation pieces: RNG, sampling distribution, tree expansion, accept.
#include <nanobind/stl/array.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "bindings/registry.h"
#include "bindings/arrays.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "speculative/accept.h"
#include "speculative/tree.h"

using namespace eyas::speculative;

static nb::dict result_dict(AcceptResult r) {
  nb::dict d;
  d["path"] = bind::vec_to_numpy(std::move(r.path));
  d["tokens"] = bind::vec_to_numpy(std::move(r.tokens));
  return d;
}

// A verified tree's node tokens and parents, I32[n] each.
struct TreeArrays {
  Tensor tokens, parents;
  int32_t n;
};
static TreeArrays tree_arrays(const char* op, bind::Array tokens, bind::Array parents) {
  TreeArrays t{bind::typed(op, "tokens", tokens, DType::I32, 1), bind::typed(op, "parents", parents, DType::I32, 1), 0};
  t.n = int32_t(t.tokens.dim(0));
  check_dim(op, "parents", t.parents, 0, t.n);
  return t;
}

static SamplingParams sampling(const char* op, float temperature, int32_t top_k, float top_p) {
  SamplingParams p{temperature, top_k, top_p};
  check_sampling(op, p);
  return p;
}

// A draw's arguments, checked: logits F32[V] (not empty, no NaN, not all -inf) and the sampling parameters.
struct DrawArgs {
  Tensor logits;
  SamplingParams p;
};
static DrawArgs draw_args(const char* op, bind::Array logits, float temperature, int32_t top_k, float top_p) {
  DrawArgs d{bind::typed(op, "logits", logits, DType::F32, 1), sampling(op, temperature, top_k, top_p)};
  if (d.logits.dim(0) < 1) fail(op, "logits must not be empty");
  check_logits_row(op, d.logits.data<float>(), d.logits.dim(0));
  return d;
}

// sample_token over a checked logits row, without the GIL.
static int32_t draw(const char* op, bind::Array logits, float temperature, int32_t top_k, float top_p, Rng& rng,
                    double* top_prob) {
  const DrawArgs d = draw_args(op, logits, temperature, top_k, top_p);
  nb::gil_scoped_release release;
  return sample_token(d.logits.data<float>(), d.logits.dim(0), d.p, rng, top_prob);
}

EYAS_BINDINGS(speculative_tree) {
  nb::module_ s = bind::speculative_module(m);

  nb::class_<Rng>(s, "Rng", "Seeded xoshiro256** generator; the same seed gives the same draws everywhere.")
      .def(nb::init<uint64_t>(), "seed"_a = 0)
      .def("reseed", &Rng::reseed, "seed"_a)
      .def("uniform", &Rng::uniform, "A double in [0, 1).")
      .def_prop_rw("state", &Rng::state, &Rng::set_state);

  s.def(
      "target_probs",
      [](bind::Array logits, float temperature, int32_t top_k, float top_p) {
        const char* op = "target_probs";
        Tensor t = bind::typed(op, "logits", logits, DType::F32, 1);
        SamplingParams p = sampling(op, temperature, top_k, top_p);
        if (p.temperature <= 0.0f) fail(op, "temperature must be > 0 for a distribution");
        if (t.dim(0) < 1) fail(op, "logits must not be empty");
        std::vector<double> probs;
        target_probs(t.data<float>(), t.dim(0), p, probs);
        return bind::vec_to_numpy(std::move(probs));
      },
      "logits"_a, "temperature"_a, "top_k"_a = 0, "top_p"_a = 1.0f,
      "float64[V] sampling distribution: softmax(logits/T), then top-k, then top-p, renormalised.");

  s.def(
      "sample",
      [](bind::Array logits, float temperature, int32_t top_k, float top_p, Rng& rng) {
        return draw("sample", logits, temperature, top_k, top_p, rng, nullptr);
      },
      "logits"_a, nb::kw_only(), "temperature"_a = 0.0f, "top_k"_a = 0, "top_p"_a = 1.0f, "rng"_a,
      "One token from logits F32[V] (argmax when temperature == 0; else softmax(logits/T), top-k, then top-p), "
      "drawn with the rules and rng accept() uses.");

  s.def(
      "sample_with_top",
      [](bind::Array logits, float temperature, int32_t top_k, float top_p, Rng& rng) {
        double top = 1.0;
        const int32_t token = draw("sample_with_top", logits, temperature, top_k, top_p, rng, &top);
        return nb::make_tuple(token, top);
      },
      "logits"_a, nb::kw_only(), "temperature"_a = 0.0f, "top_k"_a = 0, "top_p"_a = 1.0f, "rng"_a,
      "(token, top probability): sample()'s draw (the same rng use) and the largest probability of the row it "
      "was drawn from (1 when greedy): the most a drafted token could be accepted with there.");

  s.def(
      "_sample_at",
      [](bind::Array logits, double u, float temperature, int32_t top_k, float top_p) {
        const DrawArgs d = draw_args("_sample_at", logits, temperature, top_k, top_p);
        if (!(u >= 0.0 && u < 1.0)) fail("_sample_at", "u must be in [0, 1)");
        return sample_token_at(d.logits.data<float>(), d.logits.dim(0), d.p, u);
      },
      "logits"_a, "u"_a, nb::kw_only(), "temperature"_a = 0.0f, "top_k"_a = 0, "top_p"_a = 1.0f,
      "Test hook: sample()'s token for the uniform u its rng would have drawn.");

  nb::class_<TreeBuilder>(s, "TreeBuilder",
                          "EAGLE-2 best-first tree expansion driven by per-level draft logits.")
      .def(
          "__init__",
          [](TreeBuilder* self, int32_t top_k, int32_t depth, int32_t total_tokens, int64_t draft_vocab,
             std::optional<bind::Array> d2t, float min_log_prob) {
            std::vector<int32_t> map;
            if (d2t) {
              Tensor t = bind::typed("expand_tree", "d2t", *d2t, DType::I32, 1);
              map.assign(t.data<int32_t>(), t.data<int32_t>() + t.dim(0));
            }
            new (self) TreeBuilder(TreePolicy{top_k, depth, total_tokens, min_log_prob}, std::move(map), draft_vocab);
          },
          "top_k"_a, "depth"_a, "total_tokens"_a, "draft_vocab"_a, "d2t"_a = nb::none(),
          "min_log_prob"_a = -INFINITY)
      .def(
          "start",
          [](TreeBuilder& b, int32_t root_token, bind::Array logits) {
            Tensor t = bind::typed("expand_tree", "root_logits", logits, DType::F32, 1);
            check_dim("expand_tree", "root_logits", t, 0, b.draft_vocab());
            b.start(root_token, t.data<float>());
          },
          "root_token"_a, "root_logits"_a)
      .def_prop_ro("wants_level", &TreeBuilder::wants_level)
      .def_prop_ro("level", &TreeBuilder::level)
      .def_prop_ro("slots_run", &TreeBuilder::slots_run)
      .def_prop_ro("frontier_tokens", [](TreeBuilder& b) { return bind::vec_to_numpy(b.frontier_tokens()); })
      .def_prop_ro("frontier_parent_rows",
                   [](TreeBuilder& b) { return bind::vec_to_numpy(b.frontier_parent_rows()); })
      .def_prop_ro("frontier_mask",
                   [](TreeBuilder& b) {
                     const size_t f = b.frontier_tokens().size();
                     return bind::vec_to_numpy(b.frontier_mask(), {f, size_t(b.slots_run()) + f});
                   })
      .def(
          "extend",
          [](TreeBuilder& b, bind::Array logits) {
            Tensor t = bind::typed("expand_tree", "logits", logits, DType::F32, 2);
            check_dim("expand_tree", "logits", t, 0, int64_t(b.frontier_tokens().size()));
            check_dim("expand_tree", "logits", t, 1, b.draft_vocab());
            b.extend(t.data<float>());
          },
          "logits"_a)
      .def("finish", [](TreeBuilder& b) { return bind::tree_dict(b.finish()); },
           "dict(tokens, parents, depths, scores: [N], mask: uint8[N, N]) with the root at node 0.");

  s.def(
      "accept",
      [](bind::Array logits, bind::Array tokens, bind::Array parents, float temperature, int32_t top_k, float top_p,
         std::optional<Rng*> rng) {
        const char* op = "accept";
        Tensor lg = bind::typed(op, "logits", logits, DType::F32, 2);
        const auto [tk, pa, n] = tree_arrays(op, tokens, parents);
        check_dim(op, "logits", lg, 0, n);
        SamplingParams p = sampling(op, temperature, top_k, top_p);
        if (p.temperature > 0.0f && !(rng && *rng)) fail(op, "sampling (temperature > 0) needs an rng");
        check_tree(op, tk.data<int32_t>(), pa.data<int32_t>(), n, lg.dim(1));
        Rng dummy;
        Rng& g = (rng && *rng) ? **rng : dummy;
        AcceptResult r;
        {
          // A sampled walk draws a token at every node it visits (~80 us each on a 49K vocabulary): other
          // threads (the server's requests) run meanwhile.
          nb::gil_scoped_release release;
          r = accept_tree(lg.data<float>(), lg.dim(1), tk.data<int32_t>(), pa.data<int32_t>(), n, p, g);
        }
        return result_dict(std::move(r));
      },
      "logits"_a, "tokens"_a, "parents"_a, nb::kw_only(), "temperature"_a = 0.0f, "top_k"_a = 0, "top_p"_a = 1.0f,
      "rng"_a = nb::none(),
      "Accept a verified tree. logits: F32[N, V] target logits per node. Returns dict(path: accepted node indices "
      "from the root, tokens: accepted drafted tokens then the bonus token).");

  s.def(
      "accept_argmax",
      [](bind::Array argmaxes, bind::Array tokens, bind::Array parents) {
        const char* op = "accept";
        Tensor am = bind::typed(op, "argmaxes", argmaxes, DType::I32, 1);
        const auto [tk, pa, n] = tree_arrays(op, tokens, parents);
        check_dim(op, "argmaxes", am, 0, n);
        // the tree's shape; its tokens were checked against the vocabulary by the forward that gave the argmaxes
        check_tree(op, tk.data<int32_t>(), pa.data<int32_t>(), n, std::numeric_limits<int32_t>::max());
        AcceptResult r;
        {
          nb::gil_scoped_release release;
          r = accept_greedy(am.data<int32_t>(), tk.data<int32_t>(), pa.data<int32_t>(), n);
        }
        return result_dict(std::move(r));
      },
      "argmaxes"_a, "tokens"_a, "parents"_a,
      "Greedy accept from every node's target argmax (forward(..., logits='argmax_all')): the path and tokens\n"
      "accept() gives for the logits those came from.");

  s.def(
      "accept_hidden",
      [](bind::Array hidden, bind::Array norm_w, nb::tuple out_w, float eps, bind::Array tokens, bind::Array parents,
         float temperature, int32_t top_k, float top_p, std::optional<Rng*> rng) {
        const char* op = "accept";
        Tensor h = bind::typed(op, "hidden", hidden, DType::F32, 2);
        Tensor nw = bind::typed(op, "norm_w", norm_w, DType::F32, 1);
        Tensor w = bind::parse_weight(op, "out_w", out_w);
        const auto [tk, pa, n] = tree_arrays(op, tokens, parents);
        const int64_t H = h.dim(1);
        check_dim(op, "hidden", h, 0, n);
        check_dim(op, "norm_w", nw, 0, H);
        check_ndim(op, "out_w", w, 2);
        check_dim(op, "out_w", w, 1, H);
        if (!ops::matmul_supports(w.dtype)) fail(op, "out_w: unsupported weight type");
        SamplingParams p = sampling(op, temperature, top_k, top_p);
        if (p.temperature > 0.0f && !(rng && *rng)) fail(op, "sampling (temperature > 0) needs an rng");
        const int64_t V = w.dim(0);
        check_tree(op, tk.data<int32_t>(), pa.data<int32_t>(), n, V);
        Rng dummy;
        Rng& g = (rng && *rng) ? **rng : dummy;
        auto dev = bind::default_device();
        // The drafter's favourite path (first child at every level) is where the walk most likely
        // goes: its rows run as one batch, padded to 4 rows for the batched matmul path. Rows are
        // batch-invariant, so they equal the Transformer's own logits="last" rows bit for bit.
        std::vector<int32_t> first_child(size_t(n), -1), pre;
        for (int32_t i = n - 1; i >= 1; --i) first_child[size_t(pa.data<int32_t>()[i])] = i;
        for (int32_t c = 0; c >= 0; c = first_child[size_t(c)]) pre.push_back(c);
        std::vector<int32_t> slot(size_t(n), -1);
        for (size_t j = 0; j < pre.size(); ++j) slot[size_t(pre[j])] = int32_t(j);
        const int64_t R = std::max<int64_t>(int64_t(pre.size()), std::min<int64_t>(4, n));
        while (int64_t(pre.size()) < R) pre.push_back(pre.back());
        Tensor hp = Tensor::empty(DType::F32, {R, H}), xp = Tensor::empty(DType::F32, {R, H});
        Tensor batch = Tensor::empty(DType::F32, {R, V});
        for (int64_t j = 0; j < R; ++j)
          std::memcpy(hp.data<float>() + j * H, h.data<float>() + int64_t(pre[size_t(j)]) * H, size_t(H) * sizeof(float));
        Tensor xn = Tensor::empty(DType::F32, {1, H}), row = Tensor::empty(DType::F32, {1, V});
        bool batch_done = false;
        RowLogits logits = [&](int32_t node) -> const float* {
          Encoder enc(*dev);
          if (slot[size_t(node)] >= 0) {
            if (!batch_done) {
              ops::rms_norm(enc, hp, nw, xp, eps);
              ops::matmul(enc, xp, w, batch);
              enc.commit();
              batch_done = true;
            }
            return batch.data<float>() + int64_t(slot[size_t(node)]) * V;
          }
          Tensor hr = h;
          hr.offset = h.offset + size_t(node) * size_t(H) * sizeof(float);
          hr.shape = {1, H};
          ops::rms_norm(enc, hr, nw, xn, eps);
          ops::matmul(enc, xn, w, row);
          enc.commit();
          return row.data<float>();
        };
        AcceptResult r;
        {
          nb::gil_scoped_release release;
          r = accept_tree(logits, V, tk.data<int32_t>(), pa.data<int32_t>(), n, p, g);
        }
        return result_dict(std::move(r));
      },
      "hidden"_a, "norm_w"_a, "out_w"_a, "eps"_a, "tokens"_a, "parents"_a, nb::kw_only(), "temperature"_a = 0.0f,
      "top_k"_a = 0, "top_p"_a = 1.0f, "rng"_a = nb::none(),
      "accept() with the target logits computed only for the nodes the walk visits. hidden: F32[N, H] final "
      "pre-norm states; norm_w: F32[H] output norm; out_w: (array, dtype_id, [V, H]) output weight.");
}
