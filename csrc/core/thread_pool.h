// Fixed set of worker threads that run one job at a time as nth shares (tid, nth). Share t belongs to
// thread t, which claims it in a slot of its own; the caller (tid 0), and with more threads than CPUs
// every worker, takes over any share still unclaimed, so a worker the OS has descheduled never stalls
// a job. A share's work depends only on (tid, nth), so bits don't change with who runs it.
// Each slot and the job's publication sit on cache lines of their own: a job costs one line read by
// every worker and one line written by each, not 2 x nth writes queued on one shared line (16 threads
// of a 16-core host: 2.9 us per empty job before, docs/performance.md §8.6).
// Workers spin briefly before sleeping: a decode step issues hundreds of tiny jobs, and a
// condition-variable wake per job would cost more than the job.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
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
  // One share's claim and completion, each on its own cache line: the value is the generation of the
  // last job whose share t was claimed / finished.
  struct alignas(64) Flag {
    std::atomic<uint64_t> gen{0};
  };
  void worker(int tid);
  // Claims share t of job `gen` and runs it, unless someone claimed it first.
  void claim_and_run(int t, uint64_t gen);
  // claim_and_run for every share of job `gen` not yet done (share 0 is the caller's own).
  void take_over_unclaimed(uint64_t gen);
  int num_threads_;
  // Workers also take over shares nobody has claimed, as the caller does: only with more threads than
  // CPUs, since reading the others' flags costs their owners a cache-line transfer at the next claim.
  bool help_others_;
  std::vector<std::thread> threads_;
  // The published job: generation_ changes after job_ is set, so a worker that sees a new generation
  // reads that job (or, once its share is taken, a later one it will not run).
  // Everything a worker reads on a new job shares its line (a line more is a miss more per job).
  alignas(64) std::atomic<uint64_t> generation_{0};
  std::atomic<const std::function<void(int, int)>*> job_{nullptr};
  std::atomic<bool> stop_{false};
  std::unique_ptr<Flag[]> claimed_, done_;
  alignas(64) std::atomic<int> sleepers_{0};
  std::mutex mutex_;
  std::recursive_mutex run_mutex_;  // one job in flight: its shares and counters are the pool's only state
  std::condition_variable wake_;
};

}  // namespace eyas
