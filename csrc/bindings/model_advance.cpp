// Transformer.advance (model_advance.h). One call instead of forward, accept and commit: after a target
// forward the interpreter runs cache-cold, and each Python step between them cost tens of us (a chat
// round ~6 ms on the 2-core VM: accept 52-146 us, commit 7, the logits rows copied out and freed).
#include "bindings/model_advance.h"

#include <cstring>
#include <limits>
#include <string>

#include "bindings/arrays.h"
#include "bindings/convert.h"
#include "speculative/accept.h"
#include "speculative/sampling.h"

namespace eyas::bind {

using model::ForwardInput;
using model::ForwardResult;
using model::LogitsMode;
using speculative::AcceptResult;

nb::dict advance(model::Transformer& m, nb::handle tokens, nb::handle parents, float temperature, int32_t top_k,
                 float top_p, std::optional<speculative::Rng*> rng, bool capture_aux, bool top) {
  const char* op = "advance";
  Array ta, pa;
  if (!nb::try_cast<Array>(tokens, ta) || !nb::try_cast<Array>(parents, pa))
    fail(op, "tokens and parents must be int32 numpy arrays");
  Tensor tk = typed(op, "tokens", ta, DType::I32, 1), par = typed(op, "parents", pa, DType::I32, 1);
  const int32_t n = int32_t(tk.dim(0));
  check_dim(op, "parents", par, 0, n);
  const int32_t* t = tk.data<int32_t>();
  const int32_t* p = par.data<int32_t>();
  speculative::check_tree(op, t, p, n, m.spec().vocab_size);
  const speculative::SamplingParams sp{temperature, top_k, top_p};
  speculative::check_sampling(op, sp);
  const bool greedy = sp.temperature <= 0.0f;
  if (!greedy && !(rng && *rng)) fail(op, "sampling (temperature > 0) needs an rng");
  if (top && n != 1) fail(op, "top is given for a one-node tree (a plain step) only");
  bool chain = true;  // a chain runs as a causal forward: the same rows (attention's bits do not depend on the path)
  for (int32_t i = 1; i < n; ++i) chain &= p[i] == i - 1;

  ForwardInput in;
  in.tokens = t;
  in.T = n;
  in.parents = chain ? nullptr : p;
  in.capture_aux = capture_aux;
  in.commit_all = n == 1;  // a plain step: decode's in-place update of recurrent states
  in.logits = n == 1 ? (greedy ? LogitsMode::Argmax : LogitsMode::Last) : (greedy ? LogitsMode::ArgmaxAll : LogitsMode::All);
  ForwardResult r;
  AcceptResult a;
  double top_prob = 1.0;
  {
    nb::gil_scoped_release release;
    r = m.forward(in);
    if (n == 1) {
      a.path = {0};
      if (greedy) {
        a.tokens = {r.argmax};
      } else {
        const float* row = r.logits.data<float>();
        speculative::check_logits_row(op, row, r.logits.dim(1));  // as plain decoding's draw
        a.tokens = {speculative::sample_token(row, r.logits.dim(1), sp, **rng, top ? &top_prob : nullptr)};
      }
    } else {
      a = greedy ? speculative::accept_greedy(r.argmaxes.data<int32_t>(), t, p, n)
                 : speculative::accept_tree(r.logits.data<float>(), r.logits.dim(1), t, p, n, sp, **rng);
      m.commit(a.path);
    }
  }
  nb::dict out;
  if (capture_aux) {
    const int64_t W = r.aux.dim(1);
    std::vector<float> rows(a.path.size() * size_t(W));
    for (size_t j = 0; j < a.path.size(); ++j)
      std::memcpy(rows.data() + j * size_t(W), r.aux.data<float>() + int64_t(a.path[j]) * W, size_t(W) * sizeof(float));
    out["aux"] = vec_to_numpy(std::move(rows), {a.path.size(), size_t(W)});
  }
  if (top) out["top"] = top_prob;
  out["path"] = vec_to_numpy(std::move(a.path));
  out["tokens"] = vec_to_numpy(std::move(a.tokens));
  return out;
}

}  // namespace eyas::bind
