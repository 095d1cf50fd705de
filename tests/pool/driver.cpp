// ThreadPool under load, for tests/test_thread_pool_shares.py: every share of every job runs exactly once
// and run() returns only after all of them, at thread counts below, at and above the CPUs (where workers
// take over each other's unclaimed shares), with shares of uneven length. Prints "ok" or the first failure.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

int main(int argc, char** argv) {
  const int jobs = argc > 1 ? std::atoi(argv[1]) : 2000;
  for (int n : {1, 2, 3, 5, 16, 40}) {
    eyas::ThreadPool pool(n);
    std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
    for (int i = 0; i < jobs; ++i) {
      for (auto& r : runs) r.store(0, std::memory_order_relaxed);
      pool.run([&](int tid, int nth) {
        if (nth != n || tid < 0 || tid >= n) std::abort();
        // Uneven shares: some spin a few microseconds, so the caller polls while others still work.
        if ((tid + i) % 7 == 0) {
          const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(3);
          while (std::chrono::steady_clock::now() < end) {
          }
        }
        runs[static_cast<size_t>(tid)].fetch_add(1, std::memory_order_relaxed);
      });
      for (int t = 0; t < n; ++t) {
        const int r = runs[static_cast<size_t>(t)].load(std::memory_order_relaxed);
        if (r != 1) {
          std::printf("threads %d, job %d: share %d ran %d times\n", n, i, t, r);
          return 1;
        }
      }
    }
  }
  std::printf("ok\n");
  return 0;
}
