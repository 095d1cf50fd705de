// What the memory system allows: read bandwidth of a cold buffer far larger than any cache, for
// 1..N threads of the engine's pool, each thread reading its share as 1 or 4 interleaved streams
// (4 evenly spaced ranges, 256 bytes from each in turn). Decode is a stream of the weights, so
// tok/s can be at most (this GB/s) / (weight + KV bytes per token); on machines where one stream
// per core is latency-bound, the 4-stream row is what the matmul kernels aim for (they read that
// way at small T). Matmul benchmarks over a few MB (bench_matmul without EYAS_BENCH_COLD) run
// partly from the L3 cache and read higher than this. EYAS_BENCH_MB sets the buffer (default 1024).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/read_bandwidth.h"
#include "core/thread_pool.h"

using namespace eyas;

int main() {
  const size_t mb = std::getenv("EYAS_BENCH_MB") ? std::strtoull(std::getenv("EYAS_BENCH_MB"), nullptr, 10) : 1024;
  const size_t n = mb << 20, words = n / 8;
  std::vector<uint64_t> buf(words);
  for (size_t i = 0; i < words; ++i) buf[i] = i;  // touch every page: the reads below hit DRAM, not page faults
  std::printf("buffer %zu MiB\nthreads  streams/thread  GB/s (best of 3)\n", mb);
  const int max_threads = std::max(1u, std::thread::hardware_concurrency());
  for (int threads = 1; threads <= max_threads; ++threads) {
    ThreadPool pool(threads);
    for (int streams : {1, 4}) {
      const double best = read_bandwidth_gbs(pool, buf.data(), words, streams, 3);
      std::printf("%7d  %14d  %6.1f\n", threads, streams, best);
    }
  }
}
