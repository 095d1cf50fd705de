// Accepting a verified draft tree (reference eagle3.md §5.2-5.3): the greedy longest-path walk
// and, sampled, the target's own draw matched against the children (draft deterministic, q = 1).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "speculative/rng.h"
#include "speculative/sampling.h"

namespace eyas::speculative {

struct AcceptResult {
  std::vector<int32_t> path;    // [m] accepted node indices from the root (path[0] = 0)
  std::vector<int32_t> tokens;  // [m] tokens emitted: the accepted drafted tokens, then the bonus
};

// Checks a tree given as arrays: parents[0] = -1, every other parent < its own index.
void check_tree(const char* op, const int32_t* tokens, const int32_t* parents, int32_t n, int64_t vocab);

// logits: [n, vocab] target logits of every node (row i predicts the token after node i).
// Greedy: follow the child whose token equals the argmax, bonus = argmax at the last node.
// Sampling: at each node draw the target's token x as plain decoding would (one uniform from rng,
// sample_token's draw) and follow the first child whose token is x; none: x is the bonus. The output
// is plain sampled decoding's for the same rng, whatever the tree (a child is accepted with
// probability p(x), siblings with the sum of theirs: EAGLE's rejection scheme with q = 1).
AcceptResult accept_tree(const float* logits, int64_t vocab, const int32_t* tokens, const int32_t* parents,
                         int32_t n, const SamplingParams& params, Rng& rng);

// The greedy walk given every node's argmax (the target's greedy token after it; LogitsMode::ArgmaxAll):
// the same path and tokens as accept_tree's greedy walk over the logits those came from.
AcceptResult accept_greedy(const int32_t* argmaxes, const int32_t* tokens, const int32_t* parents, int32_t n);

// Same walk with logits computed on demand: row_logits(node) returns that node's [vocab] logits,
// valid until the next call. Only the visited nodes (accepted path + one) are ever computed.
using RowLogits = std::function<const float*(int32_t node)>;
AcceptResult accept_tree(const RowLogits& row_logits, int64_t vocab, const int32_t* tokens, const int32_t* parents,
                         int32_t n, const SamplingParams& params, Rng& rng);

}  // namespace eyas::speculative
