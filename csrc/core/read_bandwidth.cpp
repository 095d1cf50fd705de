#include "core/read_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace eyas {
namespace {

#if defined(__x86_64__)
// 64-byte loads: one load per cache line leaves the out-of-order window room for many lines in
// flight, as the kernels' vector loads do (8 scalar loads per line read ~2x slower).
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

}  // namespace

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

double read_bandwidth_gbs(ThreadPool& pool, const uint64_t* buf, size_t words, int streams, int reps) {
  std::vector<uint64_t> sums(size_t(pool.num_threads()) * 8);  // a line per thread
  double best = 0;
  for (int rep = 0; rep < reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.run([&](int tid, int nth) {
      int64_t w0, w1;
      ThreadPool::split(int64_t(words), tid, nth, 8, &w0, &w1);
      sums[size_t(tid) * 8] = read_streams(buf, w0, w1, streams);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, double(words * 8) / s / 1e9);
  }
  volatile uint64_t sink = 0;
  for (uint64_t v : sums) sink = sink + v;
  return best;
}

}  // namespace eyas
