// Driver of the quantized matmul: quantize the activation rows once (parallel over rows), then
// compute output columns (parallel over N only, so no reduction is ever split).
#include "cpu/matmul.h"

#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "core/dtype.h"
#include "cpu/quant/isa.h"
#include "cpu/quant/q4pack.h"
#include "cpu/quant/scratch.h"

namespace eyas::cpu {

using namespace quant;

static WKind kind_of(int32_t wtype) {
  switch (DType(wtype)) {
    case DType::F32: return kF32;
    case DType::F16: return kF16;
    case DType::BF16: return kBF16;
    case DType::Q8_0: return kQ8_0;
    case DType::Q4_0: return kQ4_0;
    case DType::Q4_1: return kQ4_1;
    case DType::Q5_0: return kQ5_0;
    case DType::Q5_1: return kQ5_1;
    case DType::Q4_K: return kQ4_K;
    case DType::Q5_K: return kQ5_K;
    case DType::Q6_K: return kQ6_K;
    default: throw std::invalid_argument("[matmul] unsupported weight type " + std::to_string(wtype));
  }
}


static size_t align64(size_t n) { return (n + 63) / 64 * 64; }

// Activation elements from which quantizing them is split across the pool's threads: below, the
// extra fork-join costs more than the rows take on one thread (Q4_1 960x576, 2 threads, T = 8:
// 25-28 -> 18-19 us; split at 32 x 1536 rows, 100 against 107 us on one thread).
constexpr int64_t kParallelQuantMinElems = 32768;

bool matmul_wants_pack(const MatmulArgs& a) {
  const Table& tb = current_table();
  const WKind kind = kind_of(a.wtype);
  if (a.n < 16) return false;
  if (kind == kQ8_0) return a.rows <= tb.q8pack_max_rows;
  if (kpackable(kind)) return tb.kpack;
  if (q5_packable(kind)) return tb.q5pack;
  return tb.q4pack_min_rows > 0 && a.rows >= tb.q4pack_min_rows && q4_packable(kind);
}

size_t matmul_pack_bytes(const MatmulArgs& a) { return pack_bytes(kind_of(a.wtype), a.n, a.k); }

void matmul_pack_weight(const MatmulArgs& a, const uint8_t* w, uint8_t* out, ThreadPool& pool) {
  const WKind kind = kind_of(a.wtype);
  const size_t wrow = row_bytes(DType(a.wtype), a.k);
  pool.run([&](int tid, int nth) {
    int64_t g0, g1;
    ThreadPool::split(a.n / 16, tid, nth, 1, &g0, &g1);
    if (g0 >= g1) return;
    if (kind == kQ8_0)
      q8_pack(w, wrow, a.k, g0, g1, out);
    else if (kpackable(kind))
      kq_pack(kind, w, wrow, a.k, g0, g1, out);
    else
      q4_pack(kind, w, wrow, a.k, g0, g1, out);
  });
}

void matmul(const MatmulArgs& a, const float* x, const uint8_t* w, float* y, ThreadPool& pool,
            const uint8_t* wpack) {
  const WKind kind = kind_of(a.wtype);
  const Table& tb = current_table();
  const bool reads_pack = matmul_wants_pack(a);
  if (!wpack && a.rows >= 2 && reads_pack && (q4_packable(kind) || q5_packable(kind))) {  // no kept pack: build one for this call
    uint8_t* p = thread_scratch<kScratchWeightPack>(matmul_pack_bytes(a));
    matmul_pack_weight(a, w, p, pool);
    wpack = p;
  }
  const int64_t T = a.rows, N = a.n, K = a.k;
  const int be = block_elems(kind);

  Job job;
  job.w = w;
  job.wrow = row_bytes(DType(a.wtype), K);
  job.t = T;
  job.n = N;
  job.k = K;
  job.y = y;
  job.wpack = reads_pack ? wpack : nullptr;
  job.act.x = x;
  job.act.k = K;
  if (be > 1) {
    const bool kq = be == 256;
    job.act.d_per_row = K / be;
    job.act.s_per_row = kq ? K / 16 : K / 32;
    // 64 spare bytes after qs: SIMD dots may load a full vector past a short row's tail.
    const size_t qs_bytes = align64(size_t(T * K) + 64), d_bytes = align64(size_t(T * job.act.d_per_row) * 4);
    uint8_t* base = thread_scratch<kScratchActivations>(qs_bytes + d_bytes + size_t(T * job.act.s_per_row) * 4);
    job.act.qs = reinterpret_cast<int8_t*>(base);
    job.act.d = reinterpret_cast<float*>(base + qs_bytes);
    job.act.s = reinterpret_cast<int32_t*>(base + qs_bytes + d_bytes);
    QuantFn q = kq ? tb.quant256 : tb.quant32;
    if (T * K >= kParallelQuantMinElems && T >= 2 && pool.num_threads() > 1) {
      pool.run([&](int tid, int nth) {
        int64_t r0, r1;
        ThreadPool::split(T, tid, nth, 1, &r0, &r1);
        if (r0 < r1) q(job.act, r0, r1);
      });
    } else {
      q(job.act, 0, T);
    }
  }
  if (tb.prepare) tb.prepare(job, kind);
  ColsFn cols = tb.cols[kind];
  pool.run([&](int tid, int nth) {
    int64_t n0, n1;
    ThreadPool::split(N, tid, nth, 16, &n0, &n1);
    if (n0 < n1) cols(job, n0, n1);
  });
}

const char* matmul_isa() { return isa_name(current_isa()); }

}  // namespace eyas::cpu
