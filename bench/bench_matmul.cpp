// Quantized matmul microbenchmark: every weight type at T = 1..128 (the small T of a tree verify
// included) on the default model's shapes, 1 and 2 threads. Prints one table: median time, GB/s of
// weight bytes, GOP/s and the time ratio against T=1 (the speculative verify path needs T=32 to
// cost well under 2x T=1). EYAS_BENCH_SCALE=k multiplies the time spent per row (default 1);
// EYAS_BENCH_TYPES=Q4_1,Q8_0, EYAS_BENCH_SHAPES=1536x576, EYAS_BENCH_THREADS=1 (or any counts: 1,4,16) and
// EYAS_BENCH_ROWS=1,32 limit the table (ratios need T=1 listed; T = 256 and 512 run only when listed);
// EYAS_ISA forces a path; EYAS_BENCH_GFNI=0 runs the K-quant unpack without GFNI where the CPU has it;
// EYAS_BENCH_NO_PACK=1 times Q4 calls that repack their weight per call (as a caller without a
// kept pack would). EYAS_BENCH_COLD=1 cycles through copies of each weight (EYAS_BENCH_COLD_MB, default
// 256 MiB, in all; at least two) so every call streams it from DRAM, as a decode step does; otherwise
// small weights stay in cache. Where the last-level cache is that large, raise EYAS_BENCH_COLD_MB.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/huge_pages.h"
#include "core/thread_pool.h"
#include "cpu/matmul.h"
#include "ops/cpu_controls.h"

#include "bench_env.h"

using namespace eyas;

namespace {

// Byte offsets of the f16 scale fields in one block; every other byte pattern is a valid block.
std::vector<int> scale_fields(DType t) {
  switch (t) {
    case DType::Q8_0: case DType::Q4_0: case DType::Q5_0: return {0};
    case DType::Q4_1: case DType::Q5_1: case DType::Q4_K: case DType::Q5_K: return {0, 2};
    case DType::Q6_K: return {208};
    default: return {};
  }
}

uint16_t f2h_small(float f) {  // |f| < 1, normal range: enough for benchmark scales
  uint32_t b;
  std::memcpy(&b, &f, 4);
  uint32_t sign = (b >> 16) & 0x8000u, exp = (b >> 23) & 0xff, man = (b >> 13) & 0x3ff;
  if (exp < 113) return uint16_t(sign);
  return uint16_t(sign | ((exp - 112) << 10) | man);
}

std::vector<uint8_t> random_weights(DType t, int64_t n, int64_t k, std::mt19937& rng) {
  const auto& tr = type_traits(t);
  std::vector<uint8_t> w(size_t(n) * row_bytes(t, k));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  if (t == DType::F32) {
    for (size_t i = 0; i < w.size() / 4; ++i) {
      float v = nd(rng);
      std::memcpy(&w[4 * i], &v, 4);
    }
    return w;
  }
  if (t == DType::F16 || t == DType::BF16) {
    for (size_t i = 0; i < w.size() / 2; ++i) {
      float v = nd(rng) * 0.5f;
      uint16_t h;
      if (t == DType::F16) {
        h = f2h_small(v);
      } else {
        uint32_t b;
        std::memcpy(&b, &v, 4);
        h = uint16_t(b >> 16);
      }
      std::memcpy(&w[2 * i], &h, 2);
    }
    return w;
  }
  for (auto& b : w) b = uint8_t(rng());
  for (size_t blk = 0; blk < w.size() / tr.block_bytes; ++blk)
    for (int off : scale_fields(t)) {
      uint16_t h = f2h_small(nd(rng) * 0.02f);
      std::memcpy(&w[blk * tr.block_bytes + off], &h, 2);
    }
  return w;
}

// Whether `item` is in the comma-separated list of environment variable `var` (unset: every item).
bool listed(const char* var, const char* item) {
  const char* only = std::getenv(var);
  return !only || !*only || std::strstr((std::string(",") + only + ",").c_str(), (std::string(",") + item + ",").c_str());
}

// EYAS_BENCH_THREADS as a list of counts (any, e.g. 1,4,16 on a many-core machine); default 1 and 2.
std::vector<int> thread_counts() {
  const char* list = std::getenv("EYAS_BENCH_THREADS");
  if (!list || !*list) return {1, 2};
  std::vector<int> out;
  for (const char* p = list; *p;) {
    char* end = nullptr;
    const long n = std::strtol(p, &end, 10);
    if (end == p) break;
    if (n > 0 && n <= 1024) out.push_back(int(n));
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

int main() {
  if (const char* g = std::getenv("EYAS_BENCH_GFNI")) eyas::ops::allow_gfni(std::atoi(g) != 0);
  const double scale = std::getenv("EYAS_BENCH_SCALE") ? std::atof(std::getenv("EYAS_BENCH_SCALE")) : 1.0;
  const DType types[] = {DType::Q4_1, DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q5_1, DType::Q4_K,
                         DType::Q5_K, DType::Q6_K, DType::F16, DType::BF16, DType::F32};
  // N x K of SmolLM2-135M: gate/up, down, q/o, lm_head (K-quants: K = 768 or 1536, multiples of 256);
  // EYAS_BENCH_SHAPES may also name others (SmolLM2-1.7B: 2048x2048,8192x2048,2048x8192,49152x2048).
  std::vector<std::array<int64_t, 2>> shapes = {{1536, 576}, {576, 1536}, {576, 576}, {49152, 576}};
  if (const char* only = std::getenv("EYAS_BENCH_SHAPES")) {
    std::string list = only;
    for (size_t at = 0; at < list.size();) {
      const size_t end = std::min(list.find(',', at), list.size());
      long long n = 0, k = 0;
      if (std::sscanf(list.substr(at, end - at).c_str(), "%lldx%lld", &n, &k) == 2 && n > 0 && k > 0 &&
          std::none_of(shapes.begin(), shapes.end(), [&](const auto& s) { return s[0] == n && s[1] == k; }))
        shapes.push_back({n, k});
      at = end + 1;
    }
  }
  // T = 256 and 512 (prefill chunks) only when EYAS_BENCH_ROWS names them: the default table stays quick.
  const int rows[] = {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 48, 64, 128, 256, 512};
  const int max_rows = 512;
  std::mt19937 rng(1234);
  std::printf("bench_matmul  isa=%s  (time per call; GB/s = weight bytes / time; ratio = time / time at T=1)\n",
              cpu::matmul_isa());
  std::printf("%-5s %-11s %3s %4s %10s %8s %8s %7s\n", "type", "N x K", "thr", "T", "median_us", "GB/s", "GOP/s",
              "ratio");
  for (DType t : types) {
    if (!listed("EYAS_BENCH_TYPES", type_traits(t).name)) continue;
    for (auto& s : shapes) {
      const int64_t n = s[0], k = type_traits(t).block_elems == 256 ? (s[1] + 255) / 256 * 256 : s[1];
      char shape[32];
      std::snprintf(shape, sizeof shape, "%lldx%lld", (long long)n, (long long)k);
      if (!listed("EYAS_BENCH_SHAPES", shape)) continue;
      std::vector<uint8_t> w = random_weights(t, n, k, rng);
      const size_t cold_mb = std::getenv("EYAS_BENCH_COLD_MB") ? size_t(std::atol(std::getenv("EYAS_BENCH_COLD_MB"))) : 256;
      const size_t copies = bench_env_flag("EYAS_BENCH_COLD") ? std::max<size_t>(2, (cold_mb << 20) / w.size()) : 1;
      std::vector<std::vector<uint8_t>> ws(copies, w);
      std::vector<float> x(size_t(max_rows * k)), y(size_t(max_rows * n));
      std::normal_distribution<float> nd(0.0f, 1.0f);
      for (auto& v : x) v = nd(rng);
      for (int threads : thread_counts()) {
        ThreadPool pool(threads);
        double t1 = 0;
        for (int T : rows) {
          if (!listed("EYAS_BENCH_ROWS", std::to_string(T).c_str()) || (T > 128 && !std::getenv("EYAS_BENCH_ROWS"))) continue;
          MatmulArgs a{T, int32_t(n), int32_t(k), int32_t(t)};
          std::vector<double> times;
          // The repacked weight the op layer keeps per weight (built once, outside the timing).
          // On the engine's allocator, as the model's packs: 2 MiB pages from 4 MiB up (alloc_streamed).
          std::vector<std::unique_ptr<void, decltype(&std::free)>> pack_store;
          std::vector<const uint8_t*> packs(copies, nullptr);
          if (cpu::matmul_wants_pack(a) && !bench_env_flag("EYAS_BENCH_NO_PACK")) {
            for (size_t c = 0; c < copies; ++c) {
              pack_store.emplace_back(alloc_streamed(cpu::matmul_pack_bytes(a)), &std::free);
              uint8_t* p = static_cast<uint8_t*>(pack_store.back().get());
              cpu::matmul_pack_weight(a, ws[c].data(), p, pool);
              packs[c] = p;
            }
          }
          cpu::matmul(a, x.data(), ws[0].data(), y.data(), pool, packs[0]);  // warm-up
          double spent = 0;
          for (size_t call = 1; (spent < 0.12 * scale && times.size() < size_t(200 * scale)) || times.size() < 3; ++call) {
            const size_t c = call % copies;
            double t0 = now();
            cpu::matmul(a, x.data(), ws[c].data(), y.data(), pool, packs[c]);
            times.push_back(now() - t0);
            spent += times.back();
          }
          std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
          const double med = times[times.size() / 2];
          if (T == 1) t1 = med;
          std::printf("%-5s %-11s %3d %4d %10.1f %8.2f %8.1f %7.2f\n", type_traits(t).name, shape, threads, T,
                      med * 1e6, double(w.size()) / med / 1e9, 2.0 * T * n * k / med / 1e9, med / t1);
        }
      }
    }
  }
  return 0;
}
