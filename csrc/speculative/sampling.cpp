#include "speculative/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/tensor.h"

namespace eyas::speculative {

void check_sampling(const char* op, const SamplingParams& p) {
  if (!std::isfinite(p.temperature) || p.temperature < 0.0f) fail(op, "temperature must be finite and >= 0");
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) fail(op, "top_p must be in (0, 1]");
}

int32_t argmax_row(const float* x, int64_t n) {
  int64_t best = -1;
  for (int64_t i = 0; i < n; ++i)
    if (!std::isnan(x[i]) && (best < 0 || x[i] > x[best])) best = i;
  return int32_t(best < 0 ? 0 : best);
}

void target_probs(const float* logits, int64_t n, const SamplingParams& p, std::vector<double>& probs) {
  probs.assign(size_t(n), 0.0);
  const double inv_t = 1.0 / double(p.temperature);
  double mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i)
    if (!std::isnan(logits[i])) mx = std::max(mx, double(logits[i]) * inv_t);
  if (!std::isfinite(mx)) {  // all -inf or NaN: fall back to the argmax so a token is always defined
    probs[size_t(argmax_row(logits, n))] = 1.0;
    return;
  }
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double z = std::isnan(logits[i]) ? -INFINITY : double(logits[i]) * inv_t;
    probs[size_t(i)] = std::exp(z - mx);
    sum += probs[size_t(i)];
  }
  for (auto& v : probs) v /= sum;
  const bool use_k = p.top_k > 0 && p.top_k < n;
  const bool use_p = p.top_p < 1.0f;
  if (!use_k && !use_p) return;
  // Rank by probability desc, ties by lower id (a stable order, so filtering is deterministic).
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return probs[a] > probs[b]; });
  size_t keep = use_k ? size_t(p.top_k) : size_t(n);
  if (use_p) {
    double cum = 0.0;
    size_t j = 0;
    while (j < keep) {
      cum += probs[order[j++]];
      if (cum >= double(p.top_p)) break;
    }
    keep = j;
  }
  double kept = 0.0;
  for (size_t j = 0; j < keep; ++j) kept += probs[order[j]];
  std::vector<double> out(size_t(n), 0.0);
  for (size_t j = 0; j < keep; ++j) out[order[j]] = probs[order[j]] / kept;
  probs.swap(out);
}

int32_t sample_index(const std::vector<double>& probs, double total, Rng& rng) {
  const double target = rng.uniform() * total;
  double cum = 0.0;
  int32_t last = -1;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] <= 0.0) continue;
    cum += probs[i];
    last = int32_t(i);
    if (target < cum) return last;
  }
  return last < 0 ? 0 : last;  // rounding left target at the very top: take the last live token
}

}  // namespace eyas::speculative
