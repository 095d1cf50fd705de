// Fixed set of worker threads that run one job at a time as nth shares (tid, nth). Any running
// thread (the caller included) claims the next unclaimed share, so a worker the OS has
// descheduled never stalls a job; a share's work depends only on (tid, nth), so bits don't change.
// Workers spin briefly before sleeping: a decode step issues hundreds of tiny jobs, and a
// condition-variable wake per job would cost more than the job.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace eyas {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }
  // Runs fn(tid, nth) on every thread (the caller is tid 0) and returns when all are done. Callers
  // on several threads (sequences served side by side over one device) take turns, job by job.
  void run(const std::function<void(int tid, int nth)>& fn);

  // Splits [0, n) into nth contiguous chunks aligned to `grain`; returns [begin, end) of tid.
  static void split(int64_t n, int tid, int nth, int64_t grain, int64_t* begin, int64_t* end);

 private:
  void worker(int tid);
  // Runs unclaimed shares of job generation `gen` until none is left.
  void drain(uint64_t gen, const std::function<void(int, int)>& fn);
  int num_threads_;
  std::vector<std::thread> threads_;
  std::atomic<const std::function<void(int, int)>*> job_{nullptr};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};       // shares not yet finished
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::recursive_mutex run_mutex_;  // one job in flight: its shares and counters are the pool's only state
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
  std::atomic<uint64_t> claim_{0};  // (generation << 32) | next share to claim
};

}  // namespace eyas
