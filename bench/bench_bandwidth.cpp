// What the memory system allows: read bandwidth of a cold buffer far larger than any cache, for
// 1..N threads of the engine's pool. Decode is a stream of the weights, so tok/s can be at most
// (this GB/s) / (weight + KV bytes per token). Matmul benchmarks over a few MB (bench_matmul) run
// partly from the L3 cache and read higher than this. EYAS_BENCH_MB sets the buffer (default 1024).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

using namespace eyas;

int main() {
  const size_t mb = std::getenv("EYAS_BENCH_MB") ? std::strtoull(std::getenv("EYAS_BENCH_MB"), nullptr, 10) : 1024;
  const size_t n = mb << 20, words = n / 8;
  std::vector<uint64_t> buf(words);
  for (size_t i = 0; i < words; ++i) buf[i] = i;  // touch every page: the reads below hit DRAM, not page faults
  std::printf("buffer %zu MiB\nthreads  GB/s (best of 3)\n", mb);
  const int max_threads = std::max(1u, std::thread::hardware_concurrency());
  for (int threads = 1; threads <= max_threads; ++threads) {
    ThreadPool pool(threads);
    double best = 0;
    std::vector<uint64_t> sums(size_t(threads) * 8);
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      pool.run([&](int tid, int nth) {
        int64_t w0, w1;
        ThreadPool::split(int64_t(words), tid, nth, 8, &w0, &w1);
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;  // independent chains so the loop is load-bound
        for (int64_t i = w0; i + 4 <= w1; i += 4) s0 += buf[i], s1 += buf[i + 1], s2 += buf[i + 2], s3 += buf[i + 3];
        sums[size_t(tid) * 8] = s0 + s1 + s2 + s3;
      });
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, double(n) / s / 1e9);
    }
    uint64_t check = 0;
    for (uint64_t v : sums) check += v;
    std::printf("%7d  %6.1f%s\n", threads, best, check == 0 ? " (?)" : "");
  }
}
