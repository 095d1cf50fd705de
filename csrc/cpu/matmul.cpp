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
  const WKind kind = kind_of_dtype(wtype);
  if (kind == kNumKinds) throw std::invalid_argument("[matmul] unsupported weight type " + std::to_string(wtype));
  return kind;
}


static size_t align64(size_t n) { return (n + 63) / 64 * 64; }

// Activation elements from which quantizing them is split across the pool's threads: below, the
// extra fork-join costs more than the rows take on one thread (Q4_1 960x576, 2 threads, T = 8:
// 25-28 -> 18-19 us; split at 32 x 1536 rows, 100 against 107 us on one thread).
constexpr int64_t kParallelQuantMinElems = 32768;

// Parts the rows of a call are split into across the pool, each part's columns split among its
// nth / parts threads. A many-row call with few 16-column groups per thread (SmolLM2-135M's 576
// columns are 36 groups: 3 for some of 16 threads, 2 for the rest) is cut into whole 16-row groups
// too, as many parts as make the largest share smallest (then the fewest: each part unpacks the
// weights again). A row's bits never depend on the rows beside it. A call with an `extra` layout
// (built for all rows at once) stays whole.
static int row_parts(int64_t t, int64_t n, int nth, bool has_extra) {
  if (has_extra || nth < 2 || t < 32) return 1;
  const int64_t groups = n / 16, row_groups = t / 16;
  int best = 1;
  int64_t best_share = -1;
  for (int parts = 1; parts <= nth && parts <= row_groups; parts *= 2) {
    if (nth % parts) break;
    const int64_t per_part = nth / parts;
    const int64_t share = (groups + per_part - 1) / per_part * ((row_groups + parts - 1) / parts);
    if (best_share < 0 || share < best_share) best = parts, best_share = share;
  }
  return best;
}

// The job restricted to activation rows [r0, r1) (their quantized rows, scales, sums and outputs).
static Job rows_of(const Job& j, int64_t r0, int64_t r1) {
  Job s = j;
  s.t = r1 - r0;
  if (s.act.x) s.act.x += r0 * j.k;
  if (s.act.qs) s.act.qs += r0 * j.k;
  if (s.act.d) s.act.d += r0 * j.act.d_per_row;
  if (s.act.s) s.act.s += r0 * j.act.s_per_row;
  s.y += r0 * j.n;
  return s;
}

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
  const int parts = row_parts(T, N, pool.num_threads(), job.extra != nullptr);
  pool.run([&](int tid, int nth) {
    // Share tid: rows of part tid / per_part, columns of column share tid % per_part.
    const int per_part = nth / parts;
    int64_t r0, r1, n0, n1;
    ThreadPool::split(T, tid / per_part, parts, 16, &r0, &r1);
    ThreadPool::split(N, tid % per_part, per_part, 16, &n0, &n1);
    if (r0 >= r1 || n0 >= n1) return;
    cols(rows_of(job, r0, r1), n0, n1);
  });
}

const char* matmul_isa() { return isa_name(current_isa()); }

}  // namespace eyas::cpu
