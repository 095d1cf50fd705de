// Build and run: g++ -O2 -std=c++17 -march=native -pthread stream_with_requests.cpp -o s && ./s (Zen 4 VM, 2026-12-07: runs.txt).
// Does requesting a 10 MB buffer during a 30 MB stream cost less than reading it cold afterwards?
#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <algorithm>
using clk = std::chrono::steady_clock;
static double now() { return std::chrono::duration<double>(clk::now().time_since_epoch()).count(); }
// Sum of a range with 4 interleaved streams (like the Q4 pack path) and one vpdpbusd per line; every `every`
// lines also requests one line of extra[] (if given) into L2 (hint T1) or L3 (T2).
__attribute__((target("avx512f,avx512vnni"))) static __m512i stream(const uint8_t* p, size_t bytes, const uint8_t* extra, size_t ebytes, int every, int hint) {
  __m512i acc = _mm512_setzero_si512(); const __m512i one = _mm512_set1_epi8(1);
  size_t lines = bytes / 64, per = lines / 4, el = 0, elines = ebytes / 64;
  for (size_t i = 0; i < per; ++i) {
    for (int s = 0; s < 4; ++s) {
      const uint8_t* q = p + (s * per + i) * 64;
      _mm_prefetch((const char*)(q + 8 * 544), _MM_HINT_T1);
      acc = _mm512_dpbusd_epi32(acc, _mm512_loadu_si512(q), one);
    }
    if (extra && el < elines && (i % every) == 0) {
      if (hint == 1) _mm_prefetch((const char*)(extra + el * 64), _MM_HINT_T1);
      else _mm_prefetch((const char*)(extra + el * 64), _MM_HINT_T2);
      ++el;
    }
  }
  return acc;
}
__attribute__((target("avx512f,avx512vnni"))) static __m512i readall(const uint8_t* p, size_t bytes) {
  __m512i acc = _mm512_setzero_si512(); const __m512i one = _mm512_set1_epi8(1);
  for (size_t i = 0; i < bytes; i += 64) { _mm_prefetch((const char*)(p + i + 4096), _MM_HINT_T1); acc = _mm512_dpbusd_epi32(acc, _mm512_loadu_si512(p + i), one); }
  return acc;
}
int main() {
  const size_t BIG = 97u << 20, W = 30u << 20, D = 10u << 20;
  uint8_t* big = (uint8_t*)aligned_alloc(4096, BIG); uint8_t* w = (uint8_t*)aligned_alloc(4096, W); uint8_t* d = (uint8_t*)aligned_alloc(4096, D);
  memset(big, 1, BIG); memset(w, 2, W); memset(d, 3, D);
  volatile int sink = 0;
  auto par = [&](auto f) { std::thread t([&] { f(1); }); f(0); t.join(); };
  for (int round = 0; round < 6; ++round) {
    for (int variant = 0; variant < 4; ++variant) {  // 0: none, 1: extra T1 during W, 2: extra T2 during W, 3: extra in last third only (T1)
      std::vector<double> tw, td;
      for (int rep = 0; rep < 10; ++rep) {
        par([&](int t) { sink += _mm512_reduce_add_epi32(readall(big + t * (BIG / 2), BIG / 2)); });
        double t0 = now();
        par([&](int t) {
          const uint8_t* wp = w + t * (W / 2); const uint8_t* dp = d + t * (D / 2);
          size_t wl = (W / 2) / 64 / 4, dl = (D / 2) / 64;
          if (variant == 0) sink += _mm512_reduce_add_epi32(stream(wp, W / 2, nullptr, 0, 1, 1));
          else if (variant < 3) sink += _mm512_reduce_add_epi32(stream(wp, W / 2, dp, D / 2, std::max<size_t>(1, wl / dl), variant));
          else {
            sink += _mm512_reduce_add_epi32(stream(wp, W / 3, nullptr, 0, 1, 1));
            sink += _mm512_reduce_add_epi32(stream(wp + W / 3, W / 2 - W / 3, dp, D / 2, std::max<size_t>(1, ((W / 2 - W / 3) / 256) / dl), 1));
          }
        });
        double t1 = now();
        par([&](int t) { sink += _mm512_reduce_add_epi32(readall(d + t * (D / 2), D / 2)); });
        double t2 = now();
        tw.push_back(t1 - t0); td.push_back(t2 - t1);
      }
      std::sort(tw.begin(), tw.end()); std::sort(td.begin(), td.end());
      printf("round %d variant %d: W %.0f us, D after %.0f us, sum %.0f us\n", round, variant, tw[5] * 1e6, td[5] * 1e6, (tw[5] + td[5]) * 1e6);
    }
  }
}
