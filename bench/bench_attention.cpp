// Tree attention microbenchmark: T query nodes (a random tree; T=1 is plain decode) over a committed
// prefix, for SmolLM2-135M-like (9 q / 3 kv heads, D=64), Qwen3-like (16 q / 8 kv heads, D=128) and
// SmolLM2-1.7B-like (32 q / 32 kv heads, D=64: no grouping, so a decode step reads the most KV) layers.
// GB/s counts the K and V rows each query needs once per kv head: sum_i visible(i) * Hkv * D * 8 bytes.
// EYAS_BENCH_COLD=1 evicts the caches before every call by reading EYAS_BENCH_EVICT_MB (default 192)
// MiB (a decode step streams ~100 MB of weights between two uses of a layer's KV), as in a model's
// decode step or small tree verify (T = 1, 2, 3, 4 over a long prefix); EYAS_BENCH_T=1,8 limits the
// T column (T = 256, a prefill chunk's size, runs only when listed there); EYAS_BENCH_KV=f16 uses a
// half-precision cache; EYAS_BENCH_LAYER=smollm2 (or qwen3, 1.7b) times that layer only;
// EYAS_BENCH_SIMD=avx2 caps the kernels' SIMD level (to time the AVX2 path on an AVX-512 machine).
#include <chrono>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/encoder.h"
#include "ops/attention.h"
#include "ops/cpu_controls.h"
#include "ops/kv.h"

#include "bench_env.h"

using namespace eyas;

namespace {

Tensor filled(std::vector<int64_t> shape, std::mt19937& rng) {
  Tensor t = Tensor::empty(DType::F32, std::move(shape));
  std::normal_distribution<float> nd;
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = nd(rng);
  return t;
}

// Ancestor-or-self mask of a random tree whose parents precede their children; returns visible count.
int64_t tree_mask(Tensor& mask, int T, std::mt19937& rng) {
  std::vector<int> parent(T, -1);
  for (int j = 1; j < T; ++j) parent[j] = int(rng() % j);
  uint8_t* m = mask.data<uint8_t>();
  std::memset(m, 0, size_t(T) * T);
  int64_t visible = 0;
  for (int i = 0; i < T; ++i)
    for (int j = i; j >= 0; j = parent[j]) m[i * T + j] = 1, ++visible;
  return visible;
}

// Reads a buffer far larger than the caches on every worker, so the next call finds its K/V in
// DRAM and the pool's workers awake (as between the dispatches of a decode step).
void evict_caches(ThreadPool& pool) {
  static const char* mb = std::getenv("EYAS_BENCH_EVICT_MB");
  static std::vector<uint64_t> big(size_t(mb ? std::atoi(mb) : 192) << 17);
  static std::vector<uint64_t> sink(64 * 8);
  pool.run([&](int tid, int nth) {
    int64_t i0, i1;
    ThreadPool::split(int64_t(big.size()), tid, nth, 8, &i0, &i1);
    uint64_t s = 0;
    for (int64_t i = i0; i < i1; i += 8) s += big[size_t(i)];
    sink[size_t(tid % 64) * 8] = s;
  });
}

bool half_cache() {
  const char* kv = std::getenv("EYAS_BENCH_KV");
  return kv && std::string(kv) == "f16";
}

// The same values in an F16 tensor, written through kv_write as the model writes its cache.
Tensor to_half(const Tensor& t) {
  Tensor h = Tensor::empty(DType::F16, t.shape);
  Tensor rows = Tensor::empty(DType::F32, {t.dim(1), t.dim(0), t.dim(2)});  // [slots, heads, D]
  for (int64_t hd = 0; hd < t.dim(0); ++hd)
    for (int64_t s = 0; s < t.dim(1); ++s)
      std::memcpy(rows.data<float>() + (s * t.dim(0) + hd) * t.dim(2), t.data<float>() + (hd * t.dim(1) + s) * t.dim(2),
                  size_t(t.dim(2)) * sizeof(float));
  Device dev("cpu", 1);
  Encoder enc(dev);
  ops::kv_write(enc, rows, h, 0);
  enc.commit();
  return h;
}

// Whether `value` is in the comma-separated list of environment variable `var` (unset: every value).
bool listed(const char* var, int value) {
  const char* only = std::getenv(var);
  if (!only || !*only) return true;
  return std::strstr((std::string(",") + only + ",").c_str(), ("," + std::to_string(value) + ",").c_str()) != nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  Device dev("cpu", argc > 1 ? std::atoi(argv[1]) : 0);  // optional thread count
  if (const char* simd = std::getenv("EYAS_BENCH_SIMD")) ops::cap_simd_kernels(simd);
  std::mt19937 rng(1);
  std::printf("tree attention, %d threads, %s cache (fastest us per call; GB/s of K+V rows read per kv head)\n",
              dev.num_threads(), half_cache() ? "F16" : "F32");
  std::printf("%-22s %6s %7s %12s %10s\n", "layer", "T", "prefix", "us/call", "GB/s");
  struct Layer {
    const char* name;
    int hq, hkv, d;
  };
  for (Layer L : {Layer{"smollm2 9/3 D=64", 9, 3, 64}, Layer{"qwen3 16/8 D=128", 16, 8, 128},
                  Layer{"1.7b 32/32 D=64", 32, 32, 64}}) {
    if (const char* only = std::getenv("EYAS_BENCH_LAYER"); only && *only && std::strncmp(L.name, only, std::strlen(only)) != 0)
      continue;
    const bool cold = bench_env_flag("EYAS_BENCH_COLD");
    for (int prefix : {128, 256, 1024, 2048, 4096}) {
      if (!listed("EYAS_BENCH_PREFIX", prefix)) continue;
      const int cap = prefix + 256;
      Tensor k = filled({L.hkv, cap, L.d}, rng), v = filled({L.hkv, cap, L.d}, rng);
      if (half_cache()) k = to_half(k), v = to_half(v);
      for (int T : {1, 2, 3, 4, 8, 32, 64, 256}) {
        if (!listed("EYAS_BENCH_T", T) || (T == 256 && !std::getenv("EYAS_BENCH_T"))) continue;
        Tensor q = filled({T, L.hq, L.d}, rng), o = Tensor::empty(DType::F32, {T, L.hq, L.d});
        Tensor mask;
        int64_t new_visible = 1;
        if (T > 1) {
          mask = Tensor::empty(DType::U8, {T, T});
          new_visible = tree_mask(mask, T, rng);
        }
        const double bytes = double(int64_t(T) * prefix + new_visible) * L.hkv * L.d * (half_cache() ? 4 : 8);
        auto once = [&] {
          Encoder enc(dev);
          ops::attention(enc, q, k, v, prefix, mask, 1.0f / std::sqrt(float(L.d)), o);
          enc.commit();
        };
        once();  // warm-up
        // Fastest of repeated calls: robust to other processes sharing the cores.
        double best = 1e30, total = 0;
        for (int it = 0; it < 3 || (total < 0.1 && it < (cold ? 200 : 2000)); ++it) {
          if (cold) evict_caches(dev.pool());
          const auto t0 = std::chrono::steady_clock::now();
          once();
          const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          best = std::min(best, el), total += el;
        }
        const double us = best * 1e6;
        std::printf("%-22s %6d %7d %12.1f %10.2f\n", L.name, T, prefix, us, bytes / (us * 1e-6) / 1e9);
      }
    }
  }
  return 0;
}
