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

namespace {

// The walk both accepts share: at each node the target's token x (token_at(node)), then the first child
// holding it (children in node order; siblings from the builder are distinct), until none does.
template <typename TokenAt>
AcceptResult walk(const int32_t* tokens, const int32_t* parents, int32_t n, TokenAt token_at) {
  std::vector<std::vector<int32_t>> children(static_cast<size_t>(n));
  for (int32_t i = 1; i < n; ++i) children[size_t(parents[i])].push_back(i);
  AcceptResult r;
  r.path.push_back(0);
  for (int32_t cur = 0;;) {
    const int32_t x = token_at(cur);
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

}  // namespace

AcceptResult accept_greedy(const int32_t* argmaxes, const int32_t* tokens, const int32_t* parents, int32_t n) {
  return walk(tokens, parents, n, [&](int32_t node) { return argmaxes[node]; });
}

AcceptResult accept_tree(const RowLogits& row_logits, int64_t vocab, const int32_t* tokens, const int32_t* parents,
                         int32_t n, const SamplingParams& params, Rng& rng) {
  // The target's token here, drawn as plain decoding draws it (greedy: the argmax; sampled: one uniform
  // from rng), so the emitted tokens are plain decoding's, draw for draw, whatever the tree; a sampled
  // child is accepted with its probability p(x), siblings with the sum of theirs, as in rejection
  // sampling with the draft treated as deterministic.
  return walk(tokens, parents, n, [&](int32_t node) { return sample_token(row_logits(node), vocab, params, rng); });
}

}  // namespace eyas::speculative
