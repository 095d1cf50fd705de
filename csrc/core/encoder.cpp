#include "core/encoder.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>

namespace eyas {

Encoder::Encoder(Device& device, EncoderOptions options)
    : device_(device), options_(options), rng_state_(options.seed * 0x9E3779B97F4A7C15ull + 1) {
  dispatches_.reserve(64);
  ranges_.reserve(256);
  keep_.reserve(256);
}

bool Encoder::any_overlap(const Range* a, size_t na, const Range* b, size_t nb) {
  for (size_t i = 0; i < na; ++i)
    for (size_t j = 0; j < nb; ++j)
      if (a[i].overlaps(b[j])) return true;
  return false;
}

void Encoder::insert_barrier() {
  group_begin_.push_back(dispatches_.size());
  group_reads_.clear();
  group_writes_.clear();
  ++num_barriers_;
  barrier_positions_.push_back(num_dispatches_);
}

void Encoder::dispatch(const char* name, const Tensor* const* reads, size_t n_reads, const Tensor* const* writes,
                       size_t n_writes, KernelFn fn) {
  record(name, reads, n_reads, writes, n_writes, std::move(fn), nullptr);
}

static void check_launch(const gpu::Launch& l, gpu::Driver& driver) {
  const char* k = l.kernel.c_str();
  auto bad = [&](const std::string& msg) { fail(k, "metal: " + msg); };
  if (l.args.size() > gpu::kMaxSetBytes) bad(std::to_string(l.args.size()) + " argument bytes (setBytes limit 4096)");
  const uint64_t threads = uint64_t(l.tg[0]) * l.tg[1] * l.tg[2];
  const uint32_t limit = driver.max_threads(l.kernel);  // throws for an unknown kernel
  if (threads == 0 || threads > limit)
    bad(std::to_string(threads) + " threads per threadgroup (the pipeline allows 1.." + std::to_string(limit) + ")");
  if (uint64_t(l.grid[0]) * l.grid[1] * l.grid[2] == 0) bad("empty grid");
  uint64_t tg_total = 0;
  for (uint32_t b : l.tg_mem) {
    if (b % 16) bad("threadgroup memory length " + std::to_string(b) + " is not a multiple of 16");
    tg_total += b;
  }
  if (tg_total > gpu::kMaxThreadgroupMemory) bad(std::to_string(tg_total) + " bytes of threadgroup memory (limit 32 KiB)");
  uint32_t seen = 0;  // bit i: buffer(i) bound
  for (const gpu::Binding& b : l.bindings) {
    if (b.index < 1 || b.index > gpu::kMaxBufferIndex) bad("buffer index " + std::to_string(b.index) + " out of range");
    if (seen >> b.index & 1) bad("buffer(" + std::to_string(b.index) + ") bound twice");
    seen |= 1u << b.index;
    if (!b.view.defined()) bad("buffer(" + std::to_string(b.index) + ") is not a tensor");
  }
}

void Encoder::launch(gpu::Launch l) {
  if (!device_.driver())
    fail(l.kernel.c_str(), std::string("a GPU launch on a ") + device_.backend() + " device with no GPU driver");
  check_launch(l, *device_.driver());
  auto owned = std::make_unique<gpu::Launch>(std::move(l));
  std::vector<const Tensor*> reads, writes;
  for (const gpu::Binding& b : owned->bindings) {
    if (b.access != gpu::Access::Write) reads.push_back(&b.view);
    if (b.access != gpu::Access::Read) writes.push_back(&b.view);
  }
  const std::string name = owned->kernel;
  record(name.c_str(), reads.data(), reads.size(), writes.data(), writes.size(), KernelFn{}, std::move(owned));
}

bool Encoder::writes_pending(const Tensor& t) const {
  if (!t.defined()) return false;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(t.data<uint8_t>());
  const Range r{lo, lo + std::max<size_t>(t.nbytes(), 1)};
  for (const Dispatch& d : dispatches_)
    if (any_overlap(&r, 1, ranges_.data() + d.w0, d.nw)) return true;
  return false;
}

void Encoder::record(const char* name, const Tensor* const* reads_begin, size_t n_reads,
                     const Tensor* const* writes_begin, size_t n_writes, KernelFn fn,
                     std::unique_ptr<gpu::Launch> launch) {
  struct View {
    const Tensor* const* b;
    size_t n;
    const Tensor* const* begin() const { return b; }
    const Tensor* const* end() const { return b + n; }
  };
  const View reads{reads_begin, n_reads}, writes{writes_begin, n_writes};
  auto range_of = [](const Tensor* t) {
    uintptr_t lo = reinterpret_cast<uintptr_t>(t->data<uint8_t>());
    return Range{lo, lo + std::max<size_t>(t->nbytes(), 1)};
  };
  for (const Tensor* t : writes)
    if (t && t->buffer && t->buffer->read_only()) fail(name, "output " + t->describe() + " is a read-only buffer");
  const uint32_t r0 = uint32_t(ranges_.size());
  for (const Tensor* t : reads) {
    if (!t || !t->buffer) continue;
    ranges_.push_back(range_of(t));
    keep_.push_back(t->buffer);
  }
  const uint32_t w0 = uint32_t(ranges_.size());
  for (const Tensor* t : writes) {
    if (!t || !t->buffer) continue;
    ranges_.push_back(range_of(t));
    keep_.push_back(t->buffer);
  }
  const uint32_t nr = w0 - r0, nw = uint32_t(ranges_.size()) - w0;
  const Range *rd = ranges_.data() + r0, *wr = ranges_.data() + w0;
  const bool group_empty = dispatches_.size() == (group_begin_.empty() ? 0 : group_begin_.back());
  bool hazard = false;
  if (!group_empty) {
    hazard = options_.serial || any_overlap(rd, nr, group_writes_.data(), group_writes_.size())  // read after write
             || any_overlap(wr, nw, group_writes_.data(), group_writes_.size())                  // write after write
             || any_overlap(wr, nw, group_reads_.data(), group_reads_.size());                   // write after read
  }
  if (hazard) insert_barrier();
  group_reads_.insert(group_reads_.end(), rd, rd + nr);
  group_writes_.insert(group_writes_.end(), wr, wr + nw);
  if (options_.check)
    for (uint32_t i = r0; i < w0 + nw; ++i) {
      const Range r = ranges_[i];
      if (std::none_of(known_.begin(), known_.end(), [&](const Range& k) { return k.lo == r.lo && k.hi == r.hi; }))
        known_.push_back(r);
    }
  dispatches_.push_back(Dispatch{name, r0, nr, w0, nw, std::move(fn), std::move(launch)});
  ++num_dispatches_;
}

static uint64_t checksum(uintptr_t lo, uintptr_t hi) {
  // FNV-1a; check mode is a debugging aid, so speed does not matter.
  uint64_t h = 1469598103934665603ull;
  for (const uint8_t* p = reinterpret_cast<const uint8_t*>(lo); p < reinterpret_cast<const uint8_t*>(hi); ++p)
    h = (h ^ *p) * 1099511628211ull;
  return h;
}

template <typename Run>
void Encoder::run_checked(Dispatch& d, Run&& run) {
  std::vector<std::pair<Range, uint64_t>> before;
  for (const Range& k : known_)
    if (!any_overlap(&k, 1, ranges_.data() + d.w0, d.nw)) before.emplace_back(k, checksum(k.lo, k.hi));
  run(d);
  for (auto& [k, h] : before)
    if (checksum(k.lo, k.hi) != h)
      throw std::runtime_error("[encoder] dispatch '" + d.name + "' wrote memory it did not declare as an output (" +
                               std::to_string(k.hi - k.lo) + "-byte range of another dispatch)");
}

namespace {

// Opt-in per-dispatch wall time (EYAS_PROFILE=1), keyed by kernel name and output size so the
// matmuls of one model tell apart; printed to stderr at exit. Off, it costs one branch per group.
struct Profile {
  struct Row { int64_t calls = 0; double seconds = 0; };
  std::mutex mutex;
  std::map<std::string, Row> rows;
  int64_t groups = 0;
  ~Profile() {
    if (rows.empty()) return;
    double total = 0;
    for (auto& [k, r] : rows) total += r.seconds;
    std::fprintf(stderr, "[encoder profile] %lld groups (barriers + 1 per commit)\n", (long long)groups);
    std::fprintf(stderr, "%-32s %10s %12s %10s %6s\n", "dispatch/out-bytes", "calls", "total ms", "us/call", "%");
    for (auto& [k, r] : rows)
      std::fprintf(stderr, "%-32s %10lld %12.2f %10.2f %6.1f\n", k.c_str(), (long long)r.calls, r.seconds * 1e3,
                   r.seconds * 1e6 / double(r.calls), 100 * r.seconds / total);
  }
};
bool profiling() {
  static const bool on = [] { const char* e = std::getenv("EYAS_PROFILE"); return e && *e && *e != '0'; }();
  return on;
}
Profile& profile() {
  static Profile p;
  return p;
}

}  // namespace

void profile_reset() {
  std::lock_guard<std::mutex> lock(profile().mutex);
  profile().rows.clear();
  profile().groups = 0;
}

// The order to run a group of n dispatches in; empty for the recorded order, so the common case
// allocates nothing.
std::vector<size_t> Encoder::group_order(size_t n) {
  std::vector<size_t> order;
  if (options_.schedule != Schedule::Forward) {
    order.resize(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
  }
  if (options_.schedule == Schedule::Reverse) std::reverse(order.begin(), order.end());
  if (options_.schedule == Schedule::Shuffle)
    for (size_t i = n; i > 1; --i) {
      rng_state_ ^= rng_state_ << 13, rng_state_ ^= rng_state_ >> 7, rng_state_ ^= rng_state_ << 17;
      std::swap(order[i - 1], order[rng_state_ % i]);
    }
  return order;
}

void Encoder::run_group(size_t begin, size_t end) {
  const size_t n = end - begin;
  const std::vector<size_t> order = group_order(n);
  const bool prof = profiling();
  for (size_t j = 0; j < n; ++j) {
    Dispatch& d = dispatches_[begin + (order.empty() ? j : order[j])];
    const auto t0 = prof ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (options_.check)
      run_checked(d, [this](Dispatch& x) { x.fn(device_.pool()); });
    else
      d.fn(device_.pool());
    if (prof) {
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const Range* w = ranges_.data() + d.w0;
      const std::string key = d.name + "/" + std::to_string(d.nw ? w->hi - w->lo : 0);
      std::lock_guard<std::mutex> lock(profile().mutex);
      auto& r = profile().rows[key];
      r.calls += 1, r.seconds += dt;
    }
  }
  if (prof) {
    std::lock_guard<std::mutex> lock(profile().mutex);
    profile().groups += 1;
  }
}

void Encoder::clear_recording() {
  dispatches_.clear(), group_begin_.clear(), ranges_.clear(), keep_.clear();
  group_reads_.clear(), group_writes_.clear(), known_.clear();
}

void Encoder::discard() {
  clear_recording();
  num_dispatches_ = num_barriers_ = 0;
  barrier_positions_.clear();
}

// Launches go to the driver in lists with a barrier between groups; a host step first waits for
// every launch before it (the list so far runs to completion), then runs on the CPU.
void Encoder::commit_gpu() {
  gpu::Driver& driver = *device_.driver();
  const int schedule = int(options_.schedule);
  std::vector<const gpu::Launch*> list;
  auto flush = [&] {
    if (!list.empty()) driver.run(list, schedule, options_.seed);
    list.clear();
  };
  auto run_one = [&](Dispatch& d) {
    if (d.launch) {
      list.push_back(d.launch.get());
      if (options_.check) flush();
    } else {
      flush();
      d.fn(device_.pool());
    }
  };
  size_t begin = 0;
  for (size_t g = 0; g <= group_begin_.size(); ++g) {
    const size_t end = g < group_begin_.size() ? group_begin_[g] : dispatches_.size();
    const std::vector<size_t> order = group_order(end - begin);
    for (size_t j = 0; j < end - begin; ++j) {
      Dispatch& d = dispatches_[begin + (order.empty() ? j : order[j])];
      if (options_.check)
        run_checked(d, run_one);
      else
        run_one(d);
    }
    if (!list.empty() && end < dispatches_.size()) list.push_back(nullptr);  // the barrier
    begin = end;
  }
  flush();
}

void Encoder::commit() {
  // Reset the recording state even if a kernel throws; the arrays keep their capacity.
  struct Reset {
    Encoder& e;
    ~Reset() { e.clear_recording(); }
  } reset{*this};
  if (device_.driver()) return commit_gpu();
  size_t begin = 0;
  for (size_t g = 0; g <= group_begin_.size(); ++g) {
    const size_t end = g < group_begin_.size() ? group_begin_[g] : dispatches_.size();
    if (end > begin) run_group(begin, end);
    begin = end;
  }
}

}  // namespace eyas
