#include "speculative/tree.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/tensor.h"
#include "ops/host_rows.h"

namespace eyas::speculative {

void check_policy(const char* op, const TreePolicy& p, int64_t draft_vocab) {
  if (p.top_k < 1) fail(op, "top_k must be >= 1, got " + std::to_string(p.top_k));
  if (p.top_k > draft_vocab)
    fail(op, "top_k " + std::to_string(p.top_k) + " exceeds the draft vocabulary " + std::to_string(draft_vocab));
  if (p.top_k > 256) fail(op, "top_k must be <= 256, got " + std::to_string(p.top_k));
  if (p.depth < 1 || p.depth > 64) fail(op, "depth must be in [1, 64], got " + std::to_string(p.depth));
  if (p.total_tokens < 2 || p.total_tokens > 1024)
    fail(op, "total_tokens (tree size incl. root) must be in [2, 1024], got " + std::to_string(p.total_tokens));
  if (!(p.min_log_prob <= 0.0f))  // also refuses NaN
    fail(op, "min_log_prob must be <= 0 (a log-probability) or -inf, got " + std::to_string(p.min_log_prob));
}

void topk_log_softmax(const float* x, int64_t n, int32_t k, float* logp, int32_t* idx) {
  // The k best by ops::topk's order (value desc, then lower index; NaN as -inf), whose SIMD scan skips
  // the 16 values at a time that cannot enter (a scalar insertion scan of a 16K-token draft vocabulary
  // took ~25 us a drafter row); the best is the max. One pass of float exps for the normaliser.
  std::vector<float> best(static_cast<size_t>(k));
  ops::topk_row_host(x, int(n), k, best.data(), idx);
  auto key = [](float v) { return std::isnan(v) ? -INFINITY : v; };
  const float mx = key(best[0]);
  const double sum = std::isfinite(mx) ? ops::exp_sum_row_host(x, n, mx) : 0.0;
  const double lse = std::isfinite(mx) ? std::log(sum) : 0.0;  // >= 0: the max term alone is 1
  for (int32_t j = 0; j < k; ++j) {
    const double v = std::isfinite(mx) ? double(key(best[size_t(j)]) - mx) - lse : -INFINITY;
    logp[j] = float(std::min(v, 0.0));
  }
}

TreeBuilder::TreeBuilder(TreePolicy policy, std::vector<int32_t> d2t, int64_t draft_vocab)
    : p_(policy), d2t_(std::move(d2t)), vd_(draft_vocab) {
  check_policy("expand_tree", p_, vd_);
  if (!d2t_.empty() && int64_t(d2t_.size()) != vd_)
    fail("expand_tree", "d2t has " + std::to_string(d2t_.size()) + " entries, draft vocab is " + std::to_string(vd_));
}

void TreeBuilder::add_children(int32_t parent, float parent_score, const float* logits) {
  std::vector<float> lp(size_t(p_.top_k));
  std::vector<int32_t> ix(size_t(p_.top_k));
  topk_log_softmax(logits, vd_, p_.top_k, lp.data(), ix.data());
  const int32_t depth = parent < 0 ? 1 : c_depth_[parent] + 1;
  for (int32_t c = 0; c < p_.top_k; ++c) {
    c_parent_.push_back(parent);
    c_token_.push_back(d2t_.empty() ? ix[c] : d2t_[ix[c]]);
    c_depth_.push_back(depth);
    c_slot_.push_back(-1);
    c_score_.push_back(parent_score + lp[c]);  // log of the path probability
  }
}

std::vector<int32_t> TreeBuilder::best(int32_t begin, int32_t end, int32_t k, bool with_first) const {
  std::vector<int32_t> ids;
  ids.reserve(size_t(end - begin));
  for (int32_t i = begin; i < end; ++i)  // a child scores <= its parent: what passes is closed under ancestors
    if (c_score_[size_t(i)] >= p_.min_log_prob || (with_first && i == 0)) ids.push_back(i);
  k = std::min<int32_t>(k, int32_t(ids.size()));
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return c_score_[a] > c_score_[b] || (c_score_[a] == c_score_[b] && a < b);
  });
  ids.resize(size_t(k));
  return ids;
}

void TreeBuilder::start(int32_t root_token, const float* root_logits) {
  root_token_ = root_token;
  c_parent_.clear(), c_token_.clear(), c_depth_.clear(), c_slot_.clear(), c_score_.clear();
  slots_run_ = 0;
  add_children(-1, 0.0f, root_logits);
  frontier_ = best(0, p_.top_k, p_.top_k);  // rank order already; drops those under the floor
  f_parent_rows_.assign(frontier_.size(), 0);
  level_ = 1;
  f_tokens_.clear();
  for (size_t j = 0; j < frontier_.size(); ++j) {
    f_tokens_.push_back(c_token_[frontier_[j]]);
    c_slot_[frontier_[j]] = slots_run_ + int32_t(j);
  }
}

bool TreeBuilder::wants_level() const { return level_ >= 1 && level_ < p_.depth && !frontier_.empty(); }

std::vector<uint8_t> TreeBuilder::frontier_mask() const {
  const size_t F = frontier_.size(), S = size_t(slots_run_) + F;
  std::vector<uint8_t> m(F * S, 0);
  for (size_t j = 0; j < F; ++j)
    for (int32_t a = frontier_[j]; a >= 0; a = c_parent_[a]) m[j * S + size_t(c_slot_[a])] = 1;
  return m;
}

void TreeBuilder::extend(const float* logits) {
  if (!wants_level()) fail("expand_tree", "extend called after the last level");
  const int32_t base = int32_t(c_score_.size());
  for (size_t j = 0; j < frontier_.size(); ++j)
    add_children(frontier_[j], c_score_[frontier_[j]], logits + int64_t(j) * vd_);
  slots_run_ += int32_t(frontier_.size());
  std::vector<int32_t> next = best(base, int32_t(c_score_.size()), p_.top_k);
  f_tokens_.clear();
  f_parent_rows_.clear();
  for (size_t j = 0; j < next.size(); ++j) {
    f_tokens_.push_back(c_token_[next[j]]);
    // Parents are the previous frontier in batch order: child index base + row*top_k + c.
    f_parent_rows_.push_back((next[j] - base) / p_.top_k);
    c_slot_[next[j]] = slots_run_ + int32_t(j);
  }
  frontier_ = std::move(next);
  ++level_;
}

DraftTree TreeBuilder::finish() const {
  std::vector<int32_t> sel = best(0, int32_t(c_score_.size()), p_.total_tokens - 1, /*with_first=*/true);
  const int32_t keep = int32_t(sel.size());
  // Ascending candidate order puts parents first: a parent ranks above its child (score >=, lower index).
  std::sort(sel.begin(), sel.end());
  std::vector<int32_t> node_of(c_score_.size(), -1);
  DraftTree t;
  const int32_t N = keep + 1;
  t.tokens = {root_token_};
  t.parents = {-1};
  t.depths = {0};
  t.scores = {0.0f};
  for (int32_t i = 0; i < keep; ++i) {
    const int32_t c = sel[size_t(i)];
    node_of[size_t(c)] = i + 1;
    const int32_t pc = c_parent_[size_t(c)];
    t.tokens.push_back(c_token_[size_t(c)]);
    t.parents.push_back(pc < 0 ? 0 : node_of[size_t(pc)]);
    t.depths.push_back(c_depth_[size_t(c)]);
    t.scores.push_back(c_score_[size_t(c)]);
  }
  t.mask.assign(size_t(N) * size_t(N), 0);
  for (int32_t i = 0; i < N; ++i) {
    uint8_t* row = &t.mask[size_t(i) * size_t(N)];
    if (i > 0) std::copy_n(&t.mask[size_t(t.parents[size_t(i)]) * size_t(N)], size_t(N), row);
    row[i] = 1;
  }
  return t;
}

}  // namespace eyas::speculative
