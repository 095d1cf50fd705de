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

AcceptResult accept_tree(const RowLogits& row_logits, int64_t vocab, const int32_t* tokens, const int32_t* parents,
                         int32_t n, const SamplingParams& params, Rng& rng) {
  std::vector<std::vector<int32_t>> children(static_cast<size_t>(n));
  for (int32_t i = 1; i < n; ++i) children[size_t(parents[i])].push_back(i);
  AcceptResult r;
  r.path.push_back(0);
  int32_t cur = 0;
  const bool greedy = params.temperature <= 0.0f;
  std::vector<double> p;
  while (true) {
    const float* row = row_logits(cur);
    if (greedy) {
      const int32_t best = argmax_row(row, vocab);
      int32_t next = -1;
      for (int32_t c : children[size_t(cur)])
        if (tokens[c] == best) {
          next = c;  // siblings from the builder are distinct; with duplicates the first wins
          break;
        }
      r.tokens.push_back(best);
      if (next < 0) return r;
      r.path.push_back(next);
      cur = next;
      continue;
    }
    // The target's own draw at this position, with the one uniform plain decoding would spend on it;
    // a child holding that token is accepted. A child is thus accepted with its probability p(x)
    // (siblings: the sum of theirs), as in rejection sampling with the draft as deterministic, and the
    // emitted tokens are plain sampled decoding's, draw for draw, whatever the tree.
    target_probs(row, vocab, params, p);
    const int32_t x = sample_index(p, 1.0, rng);
    int32_t next = -1;
    for (int32_t c : children[size_t(cur)])
      if (tokens[c] == x) {
        next = c;
        break;
      }
    if (next < 0) {
      r.tokens.push_back(x);
      return r;
    }
    r.tokens.push_back(tokens[next]);
    r.path.push_back(next);
    cur = next;
  }
}

}  // namespace eyas::speculative
