#include "speculative/sampling.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/tensor.h"
#include "ops/host_rows.h"

namespace eyas::speculative {

void check_sampling(const char* op, const SamplingParams& p) {
  if (!std::isfinite(p.temperature) || p.temperature < 0.0f) fail(op, "temperature must be finite and >= 0");
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) fail(op, "top_p must be in (0, 1]");
}

void check_logits_row(const char* op, const float* x, int64_t n) {
  int live = 0;
  for (int64_t c = 0; c < n; c += 256) {  // no branch per value, so the inner loops vectorize
    const int64_t end = std::min(n, c + 256);
    int bad = 0;
    for (int64_t i = c; i < end; ++i) {
      bad |= x[i] != x[i];
      live |= x[i] > -INFINITY;
    }
    if (bad)
      for (int64_t i = c; i < end; ++i)
        if (std::isnan(x[i])) fail(op, "logits contain NaN at index " + std::to_string(i));
  }
  if (!live) fail(op, "logits are all -inf: no token can be drawn");
}

int32_t argmax_row(const float* x, int64_t n) { return ops::argmax_row_host(x, int(n)); }

namespace {

// Ranks ids by probability desc, ties by lower id: a strict total order, so the best m ids in
// this order are exactly the first m of a full stable sort. p: the softmax row (float; as doubles they
// compare the same).
struct RanksBefore {
  const float* p;
  bool operator()(int32_t a, int32_t b) const { return p[a] > p[b] || (p[a] == p[b] && a < b); }
};

// order = the best m ids of probs[n], best first. Small m: one pass with a heap of the best so
// far (most ids fail the first comparison against the heap's worst). Large m: the m-th largest
// value by selection over a copy, then only the ids at or above it are sorted.
void best_ids(const float* probs, int64_t n, size_t m, std::vector<int32_t>& order) {
  const RanksBefore before{probs};
  order.clear();
  if (m > 64) {
    std::vector<float> values(probs, probs + n);
    std::nth_element(values.begin(), values.begin() + (m - 1), values.end(), std::greater<float>());
    const float threshold = values[m - 1];
    for (int64_t i = 0; i < n; ++i)
      if (probs[i] >= threshold) order.push_back(int32_t(i));
    std::sort(order.begin(), order.end(), before);
    order.resize(m);  // ties at the threshold: the lower ids stay
    return;
  }
  order.reserve(m);
  constexpr int64_t kChunk = 64;
  for (int64_t c = 0; c < n; c += kChunk) {
    const int64_t end = std::min(n, c + kChunk);
    if (order.size() == m) {  // a later id enters only above the worst kept value (on a tie its id ranks after):
      const float worst = probs[order.front()];  // a chunk with none is skipped by a comparison that vectorizes
      int hit = 0;
      for (int64_t i = c; i < end; ++i) hit |= probs[i] > worst;
      if (!hit) continue;
    }
    for (int64_t i = c; i < end; ++i) {
      const int32_t id = int32_t(i);
      if (order.size() < m) {
        order.push_back(id);
        std::push_heap(order.begin(), order.end(), before);  // front: the worst kept
      } else if (before(id, order.front())) {
        std::pop_heap(order.begin(), order.end(), before);
        order.back() = id;
        std::push_heap(order.begin(), order.end(), before);
      }
    }
  }
  std::sort_heap(order.begin(), order.end(), before);
}

// f(i) for each i in [0, n) with e[i] >= from, in order. At temperature 1 the ids above the nucleus floor
// are too many for a skip of whole chunks (one in ~30, most 64-id chunks hold one) and too few for a
// branch per id: a mask of 16 comparisons at a time visits them alone.
template <typename F>
void for_each_at_least(const float* e, int64_t n, float from, F&& f) {
  int64_t i = 0;
#if defined(__x86_64__)
  const __m128 v = _mm_set1_ps(from);
  for (; i + 16 <= n; i += 16) {
    unsigned bits = 0;
    for (int q = 0; q < 4; ++q) bits |= unsigned(_mm_movemask_ps(_mm_cmpge_ps(_mm_loadu_ps(e + i + 4 * q), v))) << (4 * q);
    for (; bits; bits &= bits - 1) f(i + __builtin_ctz(bits));
  }
#endif
  for (; i < n; ++i)
    if (e[i] >= from) f(i);
}

// The ids of an upper set of e[n] (every id at or above some value) whose mass reaches top_p of `sum`
// (probability i is e[i] / sum), from one histogram pass over the values' leading bits (8 buckets per
// octave), so only about the nucleus gets sorted. One bucket more than needed is taken: the histogram sums
// in another order than the ranked cumulative sum and may round differently (and if the set still falls
// short, the caller ranks every id). No division per id: ranks and buckets follow e, which orders as the
// probabilities do. At temperature 1 a real row has 1-7K ids above the floor below, against a nucleus of ~10.
void nucleus_candidates(const float* e, int64_t n, double sum, double top_p, std::vector<int32_t>& ids) {
  // Ids under `floor` hold less than (1 - top_p) / 4 together, so the ids above it reach top_p before
  // any of them is needed: only those are bucketed (most of a vocabulary is far below it). A bound a
  // little under floor x sum is as good (it only admits more ids).
  const double floor = (1.0 - top_p) / (4.0 * double(n)), loose = floor * sum * (1.0 - 1e-9);
  // at_least: the least float whose double is >= loose, so x >= at_least iff double(x) >= loose.
  float at_least = float(loose);
  if (double(at_least) < loose) at_least = std::nextafter(at_least, INFINITY);
  constexpr int kShift = 20;                        // exponent and 3 mantissa bits of a non-negative float
  constexpr uint32_t kBuckets = (0x3F800000u >> kShift) + 1;  // 1.0f >> kShift: softmax values are <= 1
  auto bucket = [](float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    return std::min(bits >> kShift, kBuckets - 1);
  };
  double mass[kBuckets] = {};
  for_each_at_least(e, n, at_least, [&](int64_t i) { mass[bucket(e[i])] += double(e[i]); });
  uint32_t b = kBuckets - 1;
  for (double acc = 0.0, need = top_p * sum; b > 0; --b) {
    acc += mass[b];
    if (acc >= need) break;
  }
  const uint32_t lowest = b > 0 ? b - 1 : 0, lowest_bits = lowest << kShift;
  float from;
  std::memcpy(&from, &lowest_bits, sizeof from);  // the least value of bucket `lowest`
  ids.clear();
  for_each_at_least(e, n, std::max(from, at_least), [&](int64_t i) { ids.push_back(int32_t(i)); });
}

// The sum of v[n] as doubles in 8 interleaved partial sums (element i into sum i % 8), added pairwise in a
// fixed order: one value on every machine, without a vocabulary-long chain of dependent additions.
double lane_sum(const float* v, size_t n) {
  double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const size_t body = n & ~size_t(7);
  for (size_t i = 0; i < body; i += 8)
    for (int l = 0; l < 8; ++l) lanes[l] += double(v[i + l]);
  for (size_t i = body; i < n; ++i) lanes[i & 7] += double(v[i]);
  return ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
}

// The sampling distribution of one row, kept in the float softmax row it starts from: probability i is
// double(e[i]) / sum (the float row renormalised in double), computed only where a filter or a draw reads
// it, so a row costs no double copy of the vocabulary and no division per token. Filtered (top_k or top_p
// cut it): `kept` the ids kept (ranked) and `head` their probabilities, renormalised. Its buffers are
// reused from row to row (a sampled decode keeps one per thread).
struct RowDistribution {
  std::vector<float> e;  // the float softmax row
  double sum = 1.0;
  int32_t only = -1;  // >= 0: a degenerate row (NaN, inf, all -inf): all mass on this id (the argmax)
  bool filtered = false;
  std::vector<int32_t> kept;
  std::vector<double> head;
  double prob(int32_t i) const { return double(e[size_t(i)]) / sum; }
  void compute(const float* logits, int64_t n, const SamplingParams& p);
};

void RowDistribution::compute(const float* logits, int64_t n, const SamplingParams& p) {
  // softmax(logits / T) by the CPU softmax kernel (float, SIMD, the same bits on every path), NaN read
  // as -inf; the ranking and the filters below work on its values as doubles. A NaN, an inf, or every
  // logit -inf makes the kernel's sum NaN and so every output: only then is the row cleaned first.
  e.resize(size_t(n));
  only = -1;
  filtered = false;
  ops::softmax_row_host(logits, int(n), p.temperature, e.data());
  if (std::isnan(e[0])) {
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; ++i) {
      e[size_t(i)] = std::isnan(logits[i]) ? -INFINITY : logits[i];
      mx = std::max(mx, e[size_t(i)]);
    }
    if (!std::isfinite(mx)) {  // all -inf or NaN, or an inf: the argmax, so a token is always defined
      only = argmax_row(logits, n);
      return;
    }
    ops::softmax_row_host(e.data(), int(n), p.temperature, e.data());
  }
  sum = lane_sum(e.data(), size_t(n));  // ~1 in float: normalised again so the mass is 1 in double
  const bool use_k = p.top_k > 0 && p.top_k < n;
  const bool use_p = p.top_p < 1.0f;
  if (!use_k && !use_p) return;
  filtered = true;
  // Only the head of the ranking matters: rank the top_k, or the candidates of the nucleus.
  const size_t limit = use_k ? size_t(p.top_k) : size_t(n);
  const RanksBefore before{e.data()};
  std::vector<int32_t>& order = kept;
  size_t keep = limit;
  if (use_k) {
    best_ids(e.data(), n, limit, order);
    if (use_p) {
      // top_p over the top_k renormalised: the filters' order in llama.cpp's and vLLM's samplers.
      double k_mass = 0.0;
      for (int32_t id : order) k_mass += prob(id);
      double cum = 0.0;
      keep = 0;
      while (keep < order.size()) {
        cum += prob(order[keep++]) / k_mass;
        if (cum >= double(p.top_p)) break;
      }
    }
  } else {
    nucleus_candidates(e.data(), n, sum, double(p.top_p), order);
    while (true) {
      const size_t m = std::min(limit, order.size());
      if (m == order.size())
        std::sort(order.begin(), order.end(), before);
      else
        std::partial_sort(order.begin(), order.begin() + m, order.end(), before);
      double cum = 0.0;
      keep = 0;
      while (keep < m) {
        cum += prob(order[keep++]);
        if (cum >= double(p.top_p)) break;
      }
      if (cum >= double(p.top_p) || m == limit || order.size() == size_t(n)) break;
      order.resize(size_t(n));  // rounding left the candidates short of top_p: rank every id
      for (int64_t i = 0; i < n; ++i) order[size_t(i)] = int32_t(i);
    }
  }
  order.resize(keep);
  head.resize(keep);
  double mass = 0.0;
  for (size_t j = 0; j < keep; ++j) {
    head[j] = prob(order[j]);
    mass += head[j];
  }
  for (size_t j = 0; j < keep; ++j) head[j] /= mass;
}

}  // namespace

void target_probs(const float* logits, int64_t n, const SamplingParams& p, std::vector<double>& probs) {
  RowDistribution d;
  d.compute(logits, n, p);
  probs.assign(size_t(n), 0.0);
  if (d.only >= 0) {
    probs[size_t(d.only)] = 1.0;
  } else if (d.filtered) {
    for (size_t j = 0; j < d.kept.size(); ++j) probs[size_t(d.kept[j])] = d.head[j];
  } else {
    for (int64_t i = 0; i < n; ++i) probs[size_t(i)] = d.prob(int32_t(i));
  }
}

namespace {

// The inverse-CDF draw of `target` (a uniform in [0, 1)) over count entries in id order: entry(k) ->
// (id, probability); zero entries are skipped.
template <typename Entry>
int32_t draw_in_id_order(size_t count, Entry entry, double target) {
  double cum = 0.0;
  int32_t last = -1;
  for (size_t k = 0; k < count; ++k) {
    const auto [id, q] = entry(k);
    if (q <= 0.0) continue;
    cum += q;
    last = id;
    if (target < cum) return last;
  }
  return last < 0 ? 0 : last;  // rounding left target at the very top: take the last live token
}

// draw_in_id_order's id over a whole row's probabilities double(e[i]) / sum, found without its chain of
// divisions and dependent additions: chunks of ids whose approximate running sum stays clearly under the
// target are skipped, and in the chunk where it crosses, approximate sums locate the id. That id is the
// exact scan's whenever the target lies farther than the approximations' error from the sums on both sides
// of it (the exact running sum is monotone); otherwise -1, and the exact scan decides (only a uniform within
// ~1e-10 of a sum, for the default model's vocabulary). A whole draw over its 49,152 ids: 52 -> 46 us on the
// Zen 4 VM (bench/bench_sampler.py).
int32_t draw_row_fast(const float* e, int64_t n, double sum, double target) {
  constexpr int64_t kChunk = 256;
  const double inv = 1.0 / sum;
  // Both running sums are within (n + a few hundred) units in the last place of the true one (all terms
  // are >= 0 and add up to ~1), whatever their order; 8x that bounds their difference.
  const double err = 8.0 * double(n + 1024) * std::numeric_limits<double>::epsilon();
  double at = 0.0;  // approximate sum of the chunks before c
  for (int64_t c = 0; c < n; c += kChunk) {
    const int64_t end = std::min(n, c + kChunk);
    const double chunk = lane_sum(e + c, size_t(end - c)) * inv;
    if (at + chunk + err <= target) {  // every exact sum up to this chunk's end is <= target: no crossing
      at += chunk;
      continue;
    }
    double a = at;
    for (int64_t k = c; k < end; ++k) {
      const double next = a + double(e[k]) * inv;
      if (target < next + err) return a + err <= target && target < next - err ? int32_t(k) : -1;
      a = next;
    }
    return -1;
  }
  return -1;  // the target is at the very top: the exact scan takes the last live id
}

// The draw of sample_token from a computed row (not one-hot) with the uniform `target`.
int32_t draw_from(const RowDistribution& d, int64_t n, double target) {
  if (!d.filtered) {  // the draw over target_probs' row
    const int32_t id = draw_row_fast(d.e.data(), n, d.sum, target);
    if (id >= 0) return id;
    return draw_in_id_order(size_t(n), [&](size_t i) { return std::pair{int32_t(i), d.prob(int32_t(i))}; }, target);
  }
  // over target_probs' row the scan meets the kept ids in id order and skips the zeros between them
  thread_local std::vector<std::pair<int32_t, double>> by_id;
  by_id.resize(d.kept.size());
  for (size_t j = 0; j < d.kept.size(); ++j) by_id[j] = {d.kept[j], d.head[j]};
  std::sort(by_id.begin(), by_id.end());
  return draw_in_id_order(by_id.size(), [&](size_t k) { return by_id[k]; }, target);
}

}  // namespace

int32_t sample_token(const float* logits, int64_t n, const SamplingParams& p, Rng& rng, double* top_prob) {
  if (top_prob) *top_prob = 1.0;
  if (p.temperature <= 0.0f) return argmax_row(logits, n);
  thread_local RowDistribution d;
  d.compute(logits, n, p);
  if (d.only >= 0) {  // target_probs' one-hot row: the draw takes its one live id
    rng.uniform();
    return d.only;
  }
  if (top_prob)  // the kept ids' largest share, or the softmax row's at its argmax (a SIMD scan)
    *top_prob = d.filtered ? *std::max_element(d.head.begin(), d.head.end()) : d.prob(argmax_row(d.e.data(), n));
  return draw_from(d, n, rng.uniform());
}

int32_t sample_token_at(const float* logits, int64_t n, const SamplingParams& p, double u) {
  if (p.temperature <= 0.0f) return argmax_row(logits, n);
  RowDistribution d;
  d.compute(logits, n, p);
  return d.only >= 0 ? d.only : draw_from(d, n, u);
}

}  // namespace eyas::speculative
