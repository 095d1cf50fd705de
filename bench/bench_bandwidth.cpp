// What the memory system allows: read bandwidth of a cold buffer far larger than any cache, for
// 1..N threads of the engine's pool, each thread reading its share as 1 or 4 interleaved streams
// (4 evenly spaced ranges, 256 bytes from each in turn). Decode is a stream of the weights, so
// tok/s can be at most (this GB/s) / (weight + KV bytes per token); on machines where one stream
// per core is latency-bound, the 4-stream row is what the matmul kernels aim for (they read that
// way at small T). Matmul benchmarks over a few MB (bench_matmul without EYAS_BENCH_COLD) run
// partly from the L3 cache and read higher than this. EYAS_BENCH_MB sets the buffer (default 1024).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/thread_pool.h"

using namespace eyas;

namespace {

#if defined(__x86_64__)
// 64-byte loads: one load per cache line leaves the out-of-order window room for many lines in
// flight, as the kernels' vector loads do (8 scalar loads per line read ~2x slower here).
__attribute__((target("avx512f"))) uint64_t read_streams_avx512(const uint64_t* buf, int64_t w0, int64_t w1,
                                                                int streams) {
  const int64_t per = (w1 - w0) / streams / 32 * 32;
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  for (int64_t i = 0; i < per; i += 32)
    for (int st = 0; st < streams; ++st) {
      const uint64_t* p = buf + w0 + st * per + i;
      a = _mm512_add_epi64(a, _mm512_loadu_si512(p)), b = _mm512_add_epi64(b, _mm512_loadu_si512(p + 8));
      c = _mm512_add_epi64(c, _mm512_loadu_si512(p + 16)), d = _mm512_add_epi64(d, _mm512_loadu_si512(p + 24));
    }
  uint64_t s = uint64_t(_mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d))));
  for (int64_t i = w0 + streams * per; i < w1; ++i) s += buf[i];
  return s;
}
#endif

// Sum of words [w0, w1) read as `streams` interleaved ranges, 32 words (256 bytes) at a time.
uint64_t read_streams(const uint64_t* buf, int64_t w0, int64_t w1, int streams) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return read_streams_avx512(buf, w0, w1, streams);
#endif
  const int64_t per = (w1 - w0) / streams / 32 * 32;
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;  // independent chains so the loop is load-bound
  for (int64_t i = 0; i < per; i += 32)
    for (int st = 0; st < streams; ++st) {
      const uint64_t* p = buf + w0 + st * per + i;
      for (int j = 0; j < 32; j += 4) s0 += p[j], s1 += p[j + 1], s2 += p[j + 2], s3 += p[j + 3];
    }
  for (int64_t i = w0 + streams * per; i < w1; ++i) s0 += buf[i];
  return s0 + s1 + s2 + s3;
}

}  // namespace

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
      double best = 0;
      std::vector<uint64_t> sums(size_t(threads) * 8);
      for (int rep = 0; rep < 3; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        pool.run([&](int tid, int nth) {
          int64_t w0, w1;
          ThreadPool::split(int64_t(words), tid, nth, 8, &w0, &w1);
          sums[size_t(tid) * 8] = read_streams(buf.data(), w0, w1, streams);
        });
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::max(best, double(n) / s / 1e9);
      }
      uint64_t check = 0;
      for (uint64_t v : sums) check += v;
      std::printf("%7d  %14d  %6.1f%s\n", threads, streams, best, check == 0 ? " (?)" : "");
    }
  }
}
