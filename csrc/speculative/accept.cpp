#include "speculative/accept.h"

#include <string>

#include "core/tensor.h"

namespace eyas::speculative {

void check_tree(const char* op, const int32_t* tokens, const int32_t* parents, int32_t n, int64_t vocab) {
  if (n < 1) fail(op, "tree must have at least the root node");
  if (parents[0] != -1) fail(op, "parents[0] must be -1 (the root)");
  for (int32_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab)
      fail(op, "tokens[" + std::to_string(i) + "] = " + std::to_string(tokens[i]) + " outside the vocabulary");
    if (i > 0 && (parents[i] < 0 || parents[i] >= i))
      fail(op, "parents[" + std::to_string(i) + "] = " + std::to_string(parents[i]) +
                   " must be an earlier node (parents come before children)");
  }
}

AcceptResult accept_tree(const float* logits, int64_t vocab, const int32_t* tokens, const int32_t* parents,
                         int32_t n, const SamplingParams& params, Rng& rng) {
  return accept_tree([&](int32_t node) { return logits + int64_t(node) * vocab; }, vocab, tokens, parents, n, params,
                     rng);
}

AcceptResult accept_greedy(const int32_t* argmaxes, const int32_t* tokens, const int32_t* parents, int32_t n) {
  AcceptResult r;
  r.path.push_back(0);
  for (int32_t cur = 0;;) {
    const int32_t x = argmaxes[cur];
    r.tokens.push_back(x);
    int32_t next = -1;  // the first child holding x: children follow their parent, in node order
    for (int32_t c = cur + 1; c < n && next < 0; ++c)
      if (parents[c] == cur && tokens[c] == x) next = c;
    if (next < 0) return r;
    r.path.push_back(next);
    cur = next;
  }
}

AcceptResult accept_tree(const RowLogits& row_logits, int64_t vocab, const int32_t* tokens, const int32_t* parents,
                         int32_t n, const SamplingParams& params, Rng& rng) {
  std::vector<std::vector<int32_t>> children(static_cast<size_t>(n));
  for (int32_t i = 1; i < n; ++i) children[size_t(parents[i])].push_back(i);
  AcceptResult r;
  r.path.push_back(0);
  int32_t cur = 0;
  std::vector<double> p;
  while (true) {
    // The target's token here, drawn as plain decoding draws it (greedy: the argmax; sampled: one
    // uniform from rng), and the first child holding it (siblings from the builder are distinct). So
    // the emitted tokens are plain decoding's, draw for draw, whatever the tree; a sampled child is
    // accepted with its probability p(x), siblings with the sum of theirs, as in rejection sampling
    // with the draft treated as deterministic.
    const int32_t x = sample_token(row_logits(cur), vocab, params, rng, p);
    r.tokens.push_back(x);
    int32_t next = -1;
    for (int32_t c : children[size_t(cur)])
      if (tokens[c] == x) {
        next = c;
        break;
      }
    if (next < 0) return r;
    r.path.push_back(next);
    cur = next;
  }
}

}  // namespace eyas::speculative
