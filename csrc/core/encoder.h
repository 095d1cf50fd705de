// Encoder with Metal's semantics on every backend: dispatches between barriers may run in any
// order (or concurrently); the encoder records the memory each dispatch reads and writes and
// inserts a barrier exactly where a read-after-write, write-after-read or write-after-write
// hazard needs one (as MLX's CommandEncoder does). Hazards are tracked on byte ranges, not
// buffer objects, so two views of the same memory (a numpy round trip) still conflict.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/gpu.h"
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

// A move-only void(ThreadPool&) callable that keeps captures of up to kInline bytes in place.
// std::function allocates for any capture over 16 bytes, i.e. for every kernel lambda (a matmul's
// captures 3 Tensors), and a decode step records ~450 of them.
class KernelFn {
 public:
  static constexpr size_t kInline = 192;
  KernelFn() = default;
  template <typename F, typename T = std::decay_t<F>, typename = std::enable_if_t<!std::is_same_v<T, KernelFn>>>
  KernelFn(F&& f) {  // NOLINT: implicit, so ops pass lambdas as before
    if constexpr (sizeof(T) <= kInline && alignof(T) <= alignof(std::max_align_t)) {
      new (buf_) T(std::forward<F>(f));
      ops_ = &kInlineOps<T>;
    } else {
      *reinterpret_cast<T**>(buf_) = new T(std::forward<F>(f));
      ops_ = &kHeapOps<T>;
    }
  }
  KernelFn(KernelFn&& o) noexcept : ops_(o.ops_) {
    if (ops_) ops_->move(o.buf_, buf_);
    o.ops_ = nullptr;
  }
  KernelFn& operator=(KernelFn&& o) noexcept {
    if (this != &o) {
      this->~KernelFn();
      new (this) KernelFn(std::move(o));
    }
    return *this;
  }
  KernelFn(const KernelFn&) = delete;
  KernelFn& operator=(const KernelFn&) = delete;
  ~KernelFn() {
    if (ops_) ops_->destroy(buf_);
  }
  void operator()(ThreadPool& pool) { ops_->call(buf_, pool); }

 private:
  struct Ops {
    void (*call)(void*, ThreadPool&);
    void (*move)(void* from, void* to);  // leaves `from` destroyed
    void (*destroy)(void*);
  };
  template <typename T>
  static constexpr Ops kInlineOps = {
      [](void* p, ThreadPool& pool) { (*static_cast<T*>(p))(pool); },
      [](void* from, void* to) {
        new (to) T(std::move(*static_cast<T*>(from)));
        static_cast<T*>(from)->~T();
      },
      [](void* p) { static_cast<T*>(p)->~T(); }};
  template <typename T>
  static constexpr Ops kHeapOps = {
      [](void* p, ThreadPool& pool) { (**static_cast<T**>(p))(pool); },
      [](void* from, void* to) { *static_cast<T**>(to) = *static_cast<T**>(from); },
      [](void* p) { delete *static_cast<T**>(p); }};
  alignas(std::max_align_t) unsigned char buf_[kInline];
  const Ops* ops_ = nullptr;
};

class Encoder {
 public:
  using KernelFn = eyas::KernelFn;

  Encoder(Device& device, EncoderOptions options = {});
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  void dispatch(const char* name, std::initializer_list<const Tensor*> reads,
                std::initializer_list<const Tensor*> writes, KernelFn fn) {
    dispatch(name, reads.begin(), reads.size(), writes.begin(), writes.size(), std::move(fn));
  }
  // The same with counted arrays (a dispatch over a number of tensors known at run time).
  void dispatch(const char* name, const Tensor* const* reads, size_t n_reads, const Tensor* const* writes,
                size_t n_writes, KernelFn fn);
  // A GPU dispatch (Metal devices only): reads and writes are the launch's bindings. Checked here
  // against Metal's limits and the driver's kernels; throws std::invalid_argument "[kernel] ...".
  // On a GPU device a dispatch() closure is a host step: it runs on the CPU once every launch
  // recorded before it has completed (memory is shared, as on Apple Silicon).
  void launch(gpu::Launch l);
  // True when a dispatch recorded since the last commit writes bytes of t (t's contents are
  // not final yet): planners that read small inputs on the host at record time check this.
  bool writes_pending(const Tensor& t) const;
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
    KernelFn fn;                          // CPU kernel or host step
    std::unique_ptr<gpu::Launch> launch;  // or a GPU launch
  };
  void record(const char* name, const Tensor* const* reads, size_t n_reads, const Tensor* const* writes,
              size_t n_writes, KernelFn fn, std::unique_ptr<gpu::Launch> launch);
  std::vector<size_t> group_order(size_t n);
  void commit_gpu();
  static bool any_overlap(const Range* a, size_t na, const Range* b, size_t nb);
  void insert_barrier();
  void clear_recording();
  void run_group(size_t begin, size_t end);
  template <typename Run>
  void run_checked(Dispatch& d, Run&& run);

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

// Forgets the EYAS_PROFILE rows so far (the table printed at exit then starts here): a benchmark
// drops its warm-up, whose repacks and first page touches would weigh on every per-call mean.
void profile_reset();

}  // namespace eyas
