// Encoder with Metal's semantics on every backend: dispatches between barriers may run in any
// order (or concurrently); the encoder records the memory each dispatch reads and writes and
// inserts a barrier exactly where a read-after-write, write-after-read or write-after-write
// hazard needs one (as MLX's CommandEncoder does). Hazards are tracked on byte ranges, not
// buffer objects, so two views of the same memory (a numpy round trip) still conflict.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"

namespace eyas {

enum class Schedule : int32_t {
  Forward = 0,  // dispatches of a concurrent group in recorded order
  Reverse = 1,  // last first: a missing barrier shows up as a wrong answer
  Shuffle = 2,  // seeded random order within each group
};

struct EncoderOptions {
  bool serial = false;  // a barrier after every dispatch, for bisecting
  bool check = false;   // fail if a dispatch writes a known buffer it did not declare
  Schedule schedule = Schedule::Forward;
  uint64_t seed = 0;
};

class Encoder {
 public:
  using KernelFn = std::function<void(ThreadPool&)>;

  Encoder(Device& device, EncoderOptions options = {});

  void dispatch(const char* name, std::initializer_list<const Tensor*> reads,
                std::initializer_list<const Tensor*> writes, KernelFn fn);
  // Runs every recorded dispatch group by group; rethrows the first kernel error.
  void commit();
  // Drops everything recorded since the last commit without running it (after a failed recording)
  // and restarts the statistics below, so a long-lived encoder does not grow without bound.
  void discard();
  // Commit is synchronous on the CPU; wait() exists so callers read like Metal code.
  void wait() {}

  Device& device() { return device_; }
  const EncoderOptions& options() const { return options_; }
  int64_t num_dispatches() const { return num_dispatches_; }
  int64_t num_barriers() const { return num_barriers_; }
  // Dispatch indices (since construction) that a barrier was placed in front of.
  const std::vector<int64_t>& barrier_positions() const { return barrier_positions_; }

 private:
  struct Range {
    uintptr_t lo, hi;  // [lo, hi)
    bool overlaps(const Range& o) const { return lo < o.hi && o.lo < hi; }
  };
  // Ranges and keep-alive buffers of all dispatches live in flat per-encoder arrays, and groups are
  // index ranges of one dispatch list: recording a decode step's ~450 dispatches then costs a few
  // amortized allocations instead of several per dispatch.
  struct Dispatch {
    std::string name;
    uint32_t r0, nr, w0, nw;  // reads: ranges_[r0, r0 + nr); writes: ranges_[w0, w0 + nw)
    KernelFn fn;
  };
  static bool any_overlap(const Range* a, size_t na, const Range* b, size_t nb);
  void insert_barrier();
  void clear_recording();
  void run_group(size_t begin, size_t end);
  void run_checked(Dispatch& d);

  Device& device_;
  EncoderOptions options_;
  std::vector<Dispatch> dispatches_;
  std::vector<size_t> group_begin_;  // first dispatch of every group after the first
  std::vector<Range> ranges_;
  std::vector<BufferPtr> keep_;      // memory stays alive until the dispatches have run
  std::vector<Range> group_reads_, group_writes_;
  std::vector<Range> known_;  // every range seen, for check mode
  int64_t num_dispatches_ = 0, num_barriers_ = 0;
  std::vector<int64_t> barrier_positions_;
  uint64_t rng_state_;
};

}  // namespace eyas
