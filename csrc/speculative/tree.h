// EAGLE-2 dynamic draft tree (reference eagle3.md §4.1), as pure bookkeeping: the caller runs
// the drafter on each frontier and hands back its logits, so the same code is driven by the C++
// drafter in production and by hand-made logits in tests.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

namespace eyas::speculative {

struct TreePolicy {
  int32_t top_k = 8;          // children per expanded node and frontier width
  int32_t depth = 6;          // max drafted tokens on a path (drafter levels)
  int32_t total_tokens = 32;  // tree size incl. the root (EAGLE's total_token convention)
  // Nodes whose cumulative draft log-prob is below this are neither expanded nor kept, except the
  // most likely first token, which is kept (not expanded) so a tree always drafts: a path's draft
  // probability tracks how often the target accepts it, so unlikely nodes cost a verify row and a
  // drafter row for little, while whether to draft at all is the caller's choice. -inf keeps all.
  float min_log_prob = -INFINITY;
};

// Nodes in ascending candidate order: root first, every parent before its children, depth
// non-decreasing.
struct DraftTree {
  std::vector<int32_t> tokens;   // [N] target-vocab ids; tokens[0] = root
  std::vector<int32_t> parents;  // [N] node index of the parent; -1 for the root
  std::vector<int32_t> depths;   // [N] root 0
  std::vector<float> scores;     // [N] cumulative draft log-prob; root 0
  std::vector<uint8_t> mask;     // [N, N] row i: 1 at i's ancestors, the root and i itself
  int32_t size() const { return int32_t(tokens.size()); }
};

void check_policy(const char* op, const TreePolicy& p, int64_t draft_vocab);

// Best-first expansion. Candidates are numbered in creation order (level 1: the root's top_k in
// rank order; later levels: frontier node j's c-th child at base + j*top_k + c). Every ranking
// is by score desc, then lower candidate index, so the result is fully deterministic.
class TreeBuilder {
 public:
  // d2t: [Vd] absolute target id of each draft index (empty = identity).
  TreeBuilder(TreePolicy policy, std::vector<int32_t> d2t, int64_t draft_vocab);

  // root_logits: [Vd] draft logits of the root's drafter row. Sets the level-1 frontier.
  void start(int32_t root_token, const float* root_logits);
  // True while another drafter level should run (depth not reached).
  bool wants_level() const;
  int32_t level() const { return level_; }  // depth of the current frontier nodes
  // Current frontier, in drafter batch order.
  const std::vector<int32_t>& frontier_tokens() const { return f_tokens_; }
  // Row of each frontier node's parent in the previous drafter batch (0 for level 1: the root's row).
  const std::vector<int32_t>& frontier_parent_rows() const { return f_parent_rows_; }
  // [F, S] visibility of the frontier over all tree slots run so far incl. this batch
  // (S = slots_run() + F): its ancestors' slots and itself.
  std::vector<uint8_t> frontier_mask() const;
  int32_t slots_run() const { return slots_run_; }
  // logits: [F, Vd] draft logits of the frontier rows; expands and picks the next frontier.
  void extend(const float* logits);
  DraftTree finish() const;

  int64_t num_candidates() const { return int64_t(c_score_.size()); }
  int64_t draft_vocab() const { return vd_; }

 private:
  void add_children(int32_t parent, float parent_score, const float* logits);
  // The k best candidates in [begin, end) at or above the floor (and candidate 0, the most likely first
  // token, when with_first), by rank.
  std::vector<int32_t> best(int32_t begin, int32_t end, int32_t k, bool with_first = false) const;

  TreePolicy p_;
  std::vector<int32_t> d2t_;
  int64_t vd_;
  int32_t root_token_ = 0;
  int32_t level_ = 0;
  int32_t slots_run_ = 0;
  // Candidate pool: parent candidate (-1 = root), target token, depth, score, drafter slot (-1 = never run).
  std::vector<int32_t> c_parent_, c_token_, c_depth_, c_slot_;
  std::vector<float> c_score_;
  std::vector<int32_t> frontier_, f_tokens_, f_parent_rows_;
};

// logp[k], idx[k]: the k best entries of log_softmax(logits[n]) by value desc, ties lower index.
// Every logp is <= 0 (so path scores never grow along a path).
void topk_log_softmax(const float* logits, int64_t n, int32_t k, float* logp, int32_t* idx);

}  // namespace eyas::speculative
