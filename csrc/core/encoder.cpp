#include "core/encoder.h"

#include <algorithm>
#include <stdexcept>

namespace eyas {

Encoder::Encoder(Device& device, EncoderOptions options)
    : device_(device), options_(options), rng_state_(options.seed * 0x9E3779B97F4A7C15ull + 1) {
  groups_.emplace_back();
}

bool Encoder::any_overlap(const std::vector<Range>& a, const std::vector<Range>& b) {
  for (const Range& x : a)
    for (const Range& y : b)
      if (x.overlaps(y)) return true;
  return false;
}

void Encoder::insert_barrier() {
  groups_.emplace_back();
  group_reads_.clear();
  group_writes_.clear();
  ++num_barriers_;
  barrier_positions_.push_back(num_dispatches_);
}

void Encoder::dispatch(const char* name, std::initializer_list<const Tensor*> reads,
                       std::initializer_list<const Tensor*> writes, KernelFn fn) {
  Dispatch d{name, {}, {}, {}, std::move(fn)};
  auto range_of = [](const Tensor* t) {
    uintptr_t lo = reinterpret_cast<uintptr_t>(t->data<uint8_t>());
    return Range{lo, lo + std::max<size_t>(t->nbytes(), 1)};
  };
  for (const Tensor* t : reads) {
    if (!t || !t->buffer) continue;
    d.reads.push_back(range_of(t));
    d.keep.push_back(t->buffer);
  }
  for (const Tensor* t : writes) {
    if (!t || !t->buffer) continue;
    if (t->buffer->read_only()) fail(name, "output " + t->describe() + " is a read-only buffer");
    d.writes.push_back(range_of(t));
    d.keep.push_back(t->buffer);
  }
  bool hazard = false;
  if (!groups_.back().empty()) {
    hazard = options_.serial || any_overlap(d.reads, group_writes_)  // read after write
             || any_overlap(d.writes, group_writes_)                 // write after write
             || any_overlap(d.writes, group_reads_);                 // write after read
  }
  if (hazard) insert_barrier();
  group_reads_.insert(group_reads_.end(), d.reads.begin(), d.reads.end());
  group_writes_.insert(group_writes_.end(), d.writes.begin(), d.writes.end());
  if (options_.check)
    for (auto* list : {&d.reads, &d.writes})
      for (const Range& r : *list)
        if (std::none_of(known_.begin(), known_.end(), [&](const Range& k) { return k.lo == r.lo && k.hi == r.hi; }))
          known_.push_back(r);
  groups_.back().push_back(std::move(d));
  ++num_dispatches_;
}

static uint64_t checksum(uintptr_t lo, uintptr_t hi) {
  // FNV-1a; check mode is a debugging aid, so speed does not matter.
  uint64_t h = 1469598103934665603ull;
  for (const uint8_t* p = reinterpret_cast<const uint8_t*>(lo); p < reinterpret_cast<const uint8_t*>(hi); ++p)
    h = (h ^ *p) * 1099511628211ull;
  return h;
}

void Encoder::run_checked(Dispatch& d) {
  std::vector<std::pair<Range, uint64_t>> before;
  for (const Range& k : known_)
    if (!any_overlap({k}, d.writes)) before.emplace_back(k, checksum(k.lo, k.hi));
  d.fn(device_.pool());
  for (auto& [k, h] : before)
    if (checksum(k.lo, k.hi) != h)
      throw std::runtime_error("[encoder] dispatch '" + d.name + "' wrote memory it did not declare as an output (" +
                               std::to_string(k.hi - k.lo) + "-byte range of another dispatch)");
}

void Encoder::run_group(std::vector<Dispatch>& group) {
  std::vector<size_t> order(group.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (options_.schedule == Schedule::Reverse) std::reverse(order.begin(), order.end());
  if (options_.schedule == Schedule::Shuffle)
    for (size_t i = order.size(); i > 1; --i) {
      rng_state_ ^= rng_state_ << 13, rng_state_ ^= rng_state_ >> 7, rng_state_ ^= rng_state_ << 17;
      std::swap(order[i - 1], order[rng_state_ % i]);
    }
  for (size_t i : order) {
    if (options_.check)
      run_checked(group[i]);
    else
      group[i].fn(device_.pool());
  }
}

void Encoder::commit() {
  auto groups = std::move(groups_);
  groups_.clear();
  groups_.emplace_back();
  group_reads_.clear();
  group_writes_.clear();
  known_.clear();
  for (auto& g : groups) run_group(g);
}

}  // namespace eyas
