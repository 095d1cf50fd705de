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

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads) {
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

void ThreadPool::drain(uint64_t gen, const std::function<void(int, int)>& fn) {
  const uint64_t tag = (gen & 0xffffffffu) << 32;
  for (;;) {
    uint64_t cur = claim_.load(std::memory_order_acquire);
    if ((cur & ~uint64_t(0xffffffffu)) != tag || int(cur & 0xffffffffu) >= num_threads_) return;
    if (!claim_.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel)) continue;
    fn(int(cur & 0xffffffffu), num_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (num_threads_ == 1) {
    fn(0, 1);
    return;
  }
  std::lock_guard<std::recursive_mutex> turn(run_mutex_);
  job_.store(&fn, std::memory_order_relaxed);
  pending_.store(num_threads_, std::memory_order_relaxed);
  uint64_t gen;
  {
    // Publishing under the lock pairs with the sleepers' predicate check.
    std::lock_guard<std::mutex> lock(mutex_);
    gen = generation_.load(std::memory_order_relaxed) + 1;
    claim_.store((gen & 0xffffffffu) << 32, std::memory_order_release);
    generation_.store(gen, std::memory_order_release);
  }
  if (sleepers_.load() > 0) wake_.notify_all();
  drain(gen, fn);
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
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
    // job_ may already belong to a later job (or be null); drain() runs only shares tagged with
    // `gen`, and while one of those is unclaimed the caller is still inside run() for that job.
    const std::function<void(int, int)>* job = job_.load(std::memory_order_acquire);
    if (job) drain(gen, *job);
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
