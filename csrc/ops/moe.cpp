#include "ops/moe.h"

#include <cstring>
#include <memory>
#include <vector>

#include "cpu/moe.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"

namespace eyas::ops {

static void check_route_args(const char* op, const Tensor& logits, int top_k) {
  check_dtype(op, "router_logits", logits, DType::F32);
  check_ndim(op, "router_logits", logits, 2);
  if (top_k < 1 || top_k > logits.dim(1))
    fail(op, "top_k must be in [1, " + std::to_string(logits.dim(1)) + "], got " + std::to_string(top_k));
}

void moe_route(Encoder& enc, const Tensor& logits, int top_k, bool norm, const Tensor& idx, const Tensor& w) {
  const char* op = "moe_route";
  check_route_args(op, logits, top_k);
  check_dtype(op, "idx", idx, DType::I32);
  check_dtype(op, "weights", w, DType::F32);
  std::vector<int64_t> want{logits.dim(0), top_k};
  if (idx.shape != want || w.shape != want) fail(op, "idx and weights must be [T, top_k]");
  const int64_t T = logits.dim(0), E = logits.dim(1);
  enc.dispatch(op, {&logits}, {&idx, &w}, [=](ThreadPool&) {
    cpu::moe_route(T, E, top_k, norm, logits.data<float>(), idx.data<int32_t>(), w.data<float>());
  });
}

// Expert e of a stacked [E, rows, cols] weight, as a 2-D view (no copy).
static Tensor expert(const Tensor& w, int64_t e) {
  Tensor v = w;
  v.shape = {w.dim(1), w.dim(2)};
  v.offset = w.offset + size_t(e) * size_t(w.dim(1)) * row_bytes(w.dtype, w.dim(2));
  return v;
}

static Tensor rows_of(const Tensor& t, int64_t r0, int64_t n) {
  Tensor v = t;
  v.shape[0] = n;
  v.offset = t.offset + size_t(r0) * size_t(t.dim(1)) * sizeof(float);
  return v;
}

void moe_ffn(Encoder& enc, const Tensor& x, const Tensor& logits, const Tensor& gate_exps, const Tensor& up_exps,
             const Tensor& down_exps, int top_k, bool norm, const Tensor& y) {
  const char* op = "moe_ffn";
  check_route_args(op, logits, top_k);
  check_dtype(op, "x", x, DType::F32);
  check_dtype(op, "y", y, DType::F32);
  check_ndim(op, "x", x, 2);
  const int64_t T = x.dim(0), H = x.dim(1), E = logits.dim(1);
  check_dim(op, "router_logits", logits, 0, T);
  if (y.shape != x.shape) fail(op, "y " + y.describe() + " must match x " + x.describe());
  check_ndim(op, "gate_exps", gate_exps, 3);
  const int64_t Ie = gate_exps.dim(1);
  for (auto [name, t, rows, cols] : {std::tuple{"gate_exps", &gate_exps, Ie, H}, std::tuple{"up_exps", &up_exps, Ie, H},
                                     std::tuple{"down_exps", &down_exps, H, Ie}}) {
    if (t->ndim() != 3 || t->dim(0) != E || t->dim(1) != rows || t->dim(2) != cols)
      fail(op, std::string(name) + " " + t->describe() + " must be [" + std::to_string(E) + ", " +
                   std::to_string(rows) + ", " + std::to_string(cols) + "]");
  }
  Device* dev = &enc.device();
  // Routing depends on data computed earlier in the same encoder, so the expert matmuls are
  // recorded on a nested encoder when this dispatch runs.
  enc.dispatch(op, {&x, &logits, &gate_exps, &up_exps, &down_exps}, {&y}, [=](ThreadPool& pool) {
    const int64_t n = T * top_k;
    std::vector<int32_t> idx(static_cast<size_t>(n));
    std::vector<float> w(static_cast<size_t>(n));
    cpu::moe_route(T, E, top_k, norm, logits.data<float>(), idx.data(), w.data());
    // Group the (token, slot) assignments by expert so each expert runs one matmul over its rows.
    std::vector<int64_t> count(static_cast<size_t>(E) + 1, 0), pos(static_cast<size_t>(n));
    for (int64_t a = 0; a < n; ++a) ++count[idx[a] + 1];
    for (int64_t e = 0; e < E; ++e) count[e + 1] += count[e];
    std::vector<int64_t> fill(count.begin(), count.end() - 1);
    Tensor xg = Tensor::empty(DType::F32, {n, H}), g = Tensor::empty(DType::F32, {n, Ie});
    Tensor u = Tensor::empty(DType::F32, {n, Ie}), yg = Tensor::empty(DType::F32, {n, H});
    for (int64_t a = 0; a < n; ++a) {
      pos[a] = fill[idx[a]]++;
      std::memcpy(xg.data<float>() + pos[a] * H, x.data<float>() + (a / top_k) * H, size_t(H) * sizeof(float));
    }
    Encoder inner(*dev);
    for (int64_t e = 0; e < E; ++e) {
      const int64_t r0 = count[e], m = count[e + 1] - count[e];
      if (m == 0) continue;
      Tensor xe = rows_of(xg, r0, m), ge = rows_of(g, r0, m), ue = rows_of(u, r0, m), ye = rows_of(yg, r0, m);
      matmul(inner, xe, expert(gate_exps, e), ge);
      matmul(inner, xe, expert(up_exps, e), ue);
      silu_mul(inner, ge, ue, ge);
      matmul(inner, ge, expert(down_exps, e), ye);
    }
    inner.commit();
    // Weighted sum in rank order: the same float operations for a token whatever T is.
    float* out = y.data<float>();
    const float* ys = yg.data<float>();
    pool.run([&](int tid, int nth) {
      int64_t t0, t1;
      ThreadPool::split(T, tid, nth, 1, &t0, &t1);
      for (int64_t t = t0; t < t1; ++t) {
        float* o = out + t * H;
        for (int64_t h = 0; h < H; ++h) o[h] = 0.0f;
        for (int j = 0; j < top_k; ++j) {
          const float wj = w[t * top_k + j];
          const float* r = ys + pos[t * top_k + j] * H;
          for (int64_t h = 0; h < H; ++h) o[h] += wj * r[h];
        }
      }
    });
  });
}

}  // namespace eyas::ops
