#include "core/thread_pool.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void cpu_relax() { _mm_pause(); }
#else
static inline void cpu_relax() {}
#endif

namespace eyas {

// Spin first (a decode step's next job arrives within microseconds), then yield the core (so an
// oversubscribed machine still makes progress), then sleep on the condition variable.
constexpr int kSpinIterations = 4000;
constexpr int kYieldIterations = 2000;
// Polls of the shares' completion before the caller takes over shares nobody has claimed: long
// enough for a spinning worker to see the job (~0.1-0.5 us; reading its claim line sooner costs it a
// miss at its next claim), short against a descheduled one.
constexpr int kTakeOverAfter = 64;

static bool more_threads_than_cpus(int n) {
  const unsigned cpus = std::thread::hardware_concurrency();
  return cpus != 0 && unsigned(n) > cpus;
}

ThreadPool::ThreadPool(int num_threads)
    : num_threads_(num_threads),
      help_others_(more_threads_than_cpus(num_threads)),
      claimed_(new Flag[size_t(std::max(num_threads, 1))]),
      done_(new Flag[size_t(std::max(num_threads, 1))]) {
  if (num_threads < 1 || num_threads > 1024)
    throw std::invalid_argument("[ThreadPool] num_threads must be in [1, 1024], got " + std::to_string(num_threads));
  for (int t = 1; t < num_threads; ++t) threads_.emplace_back(&ThreadPool::worker, this, t);
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& th : threads_) th.join();
}

void ThreadPool::claim_and_run(int t, uint64_t gen) {
  uint64_t c = claimed_[t].gen.load(std::memory_order_relaxed);
  if (c >= gen || !claimed_[t].gen.compare_exchange_strong(c, gen, std::memory_order_acq_rel)) return;
  // Share t of `gen` was unclaimed, so that job is still in flight and job_ is still its job.
  const std::function<void(int, int)>* job = job_.load(std::memory_order_acquire);
  (*job)(t, num_threads_);
  done_[t].gen.store(gen, std::memory_order_release);
}

void ThreadPool::take_over_unclaimed(uint64_t gen) {
  for (int t = 1; t < num_threads_; ++t)
    if (done_[t].gen.load(std::memory_order_acquire) != gen) claim_and_run(t, gen);
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (num_threads_ == 1) {
    fn(0, 1);
    return;
  }
  std::lock_guard<std::recursive_mutex> turn(run_mutex_);
  job_.store(&fn, std::memory_order_relaxed);
  uint64_t gen;
  {
    // Publishing under the lock pairs with the sleepers' predicate check.
    std::lock_guard<std::mutex> lock(mutex_);
    gen = generation_.load(std::memory_order_relaxed) + 1;
    generation_.store(gen, std::memory_order_release);
  }
  if (sleepers_.load(std::memory_order_relaxed) > 0) wake_.notify_all();
  fn(0, num_threads_);  // share 0 is the caller's: no one else takes it
  for (int spin = 0;; ++spin) {
    bool all = true;
    for (int t = 1; t < num_threads_; ++t)  // independent loads: the misses overlap
      all &= done_[t].gen.load(std::memory_order_acquire) == gen;
    if (all) break;
    if (spin >= kTakeOverAfter) take_over_unclaimed(gen);
    if (spin < kSpinIterations)
      cpu_relax();
    else
      std::this_thread::yield();  // the share's owner was descheduled: let it run
  }
  job_.store(nullptr, std::memory_order_relaxed);
}

void ThreadPool::worker(int tid) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < kSpinIterations + kYieldIterations; ++spin) {
      if (spin < kSpinIterations)
        cpu_relax();
      else
        std::this_thread::yield();
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      sleepers_.fetch_sub(1);
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_.load()) return;
    claim_and_run(tid, gen);
    if (help_others_) take_over_unclaimed(gen);  // more threads than CPUs: some owners wait for a CPU
  }
}

void ThreadPool::split(int64_t n, int tid, int nth, int64_t grain, int64_t* begin, int64_t* end) {
  grain = std::max<int64_t>(grain, 1);
  int64_t blocks = (n + grain - 1) / grain;
  int64_t per = blocks / nth, extra = blocks % nth;
  int64_t b0 = tid * per + std::min<int64_t>(tid, extra);
  int64_t b1 = b0 + per + (tid < extra ? 1 : 0);
  *begin = std::min(n, b0 * grain);
  *end = std::min(n, b1 * grain);
}

}  // namespace eyas
