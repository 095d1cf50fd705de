#include "metal/ops.h"

#include <stdexcept>
#include <string>

#include "metal/kernel_args.h"
#include "metal/kernel_names.h"

namespace eyas::metal {
namespace {

uint32_t ceil_div(int64_t a, int64_t b) { return uint32_t((a + b - 1) / b); }
Arg arg(const Tensor& t) { return {t.data<uint8_t>(), t.nbytes()}; }
struct Dim3 {
  uint32_t v[3];
};
Dim3 d3(uint32_t x, uint32_t y = 1, uint32_t z = 1) { return {{x, y, z}}; }

}  // namespace

void rms_norm(Encoder& enc, const Tensor& x, const Tensor& w, const Tensor& y, float eps) {
  RmsNormArgs a{int32_t(x.rows()), int32_t(x.dim(-1)), eps};
  enc.dispatch("rms_norm_f32", &a, sizeof a, {arg(x), arg(w)}, {arg(y)}, d3(a.rows).v, d3(kRowThreads).v);
}

void rope(Encoder& enc, const Tensor& x, const Tensor& positions, const Tensor& inv_freq, int rot_dim, int style,
          const Tensor& y) {
  RopeArgs a{int32_t(x.dim(0)), int32_t(x.dim(1)), int32_t(x.dim(2)), rot_dim, style};
  enc.dispatch("rope_f32", &a, sizeof a, {arg(x), arg(positions), arg(inv_freq)}, {arg(y)},
               d3(a.heads, a.tokens).v, d3(32).v);
}

void elementwise(Encoder& enc, const char* op, const Tensor& a, const Tensor& b, float s, const Tensor& y) {
  const int64_t cols = a.dim(-1), n = a.numel();
  ElementwiseArgs args{int32_t(n / (cols ? cols : 1)), int32_t(cols), int32_t(b.defined() && b.numel() != n), s};
  const std::string name = std::string(op) + "_f32";
  const Dim3 grid = d3(ceil_div(n, kFlatThreads)), tg = d3(kFlatThreads);
  if (b.defined())
    enc.dispatch(name, &args, sizeof args, {arg(a), arg(b)}, {arg(y)}, grid.v, tg.v);
  else
    enc.dispatch(name, &args, sizeof args, {arg(a)}, {arg(y)}, grid.v, tg.v);
}

void softmax(Encoder& enc, const Tensor& x, float temperature, bool log, const Tensor& y) {
  SoftmaxArgs a{int32_t(x.dim(0)), int32_t(x.dim(1)), temperature, log ? 1 : 0};
  enc.dispatch("softmax_f32", &a, sizeof a, {arg(x)}, {arg(y)}, d3(a.rows).v, d3(kRowThreads).v);
}

void argmax(Encoder& enc, const Tensor& x, const Tensor& idx) {
  TopkArgs a{int32_t(x.dim(0)), int32_t(x.dim(1)), 1};
  enc.dispatch("argmax_f32", &a, sizeof a, {arg(x)}, {arg(idx)}, d3(a.rows).v, d3(kRowThreads).v);
}

void topk(Encoder& enc, const Tensor& x, int k, const Tensor& values, const Tensor& idx) {
  TopkArgs a{int32_t(x.dim(0)), int32_t(x.dim(1)), k};
  enc.dispatch("topk_f32", &a, sizeof a, {arg(x)}, {arg(values), arg(idx)}, d3(a.rows).v, d3(kRowThreads).v);
}

// The KV kernels take F32 or F16 caches (kv_dtype="f16"); true for F16.
static bool half_cache(const char* op, const Tensor& cache) {
  if (cache.dtype != DType::F32 && cache.dtype != DType::F16)
    throw std::invalid_argument(std::string("[") + op + "] metal: the KV cache must be F32 or F16");
  return cache.dtype == DType::F16;
}

void attention(Encoder& enc, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int prefix_len,
               const Tensor& mask, float scale, const Tensor& o) {
  const bool f16 = half_cache("attention", k_cache);
  if (v_cache.dtype != k_cache.dtype) throw std::invalid_argument("[attention] metal: k_cache and v_cache types differ");
  const int n_q = int(q.dim(0)), n_new = mask.defined() ? int(mask.dim(1)) : n_q;
  if (mask.defined() && n_new > kAttnMaxNew)
    throw std::invalid_argument("[attention] metal: at most " + std::to_string(kAttnMaxNew) + " masked new slots");
  AttentionArgs a{n_q,         n_new,      int32_t(q.dim(1)), int32_t(k_cache.dim(0)), int32_t(q.dim(2)),
                  int32_t(k_cache.dim(1)), prefix_len, mask.defined() ? 0 : 1, scale};
  // Causal calls bind q in the mask slot: the kernel never reads it then.
  const Arg m = mask.defined() ? arg(mask) : arg(q);
  enc.dispatch(attention_kernel(a.head_dim, f16), &a, sizeof a, {arg(q), arg(k_cache), arg(v_cache), m}, {arg(o)},
               d3(a.n_heads, a.n_q).v, d3(kRowThreads).v);
}

void kv_write(Encoder& enc, const Tensor& kv_new, const Tensor& cache, int start_slot) {
  const bool f16 = half_cache("kv_write", cache);
  KvCopyArgs a{int32_t(kv_new.dim(0)), int32_t(cache.dim(0)), int32_t(cache.dim(2)), int32_t(cache.dim(1)), start_slot};
  enc.dispatch(f16 ? "kv_write_f16" : "kv_write_f32", &a, sizeof a, {arg(kv_new)}, {arg(cache)},
               d3(ceil_div(a.head_dim, 32), a.n_kv_heads, a.rows).v, d3(32).v);
}

void kv_move_rows(Encoder& enc, const Tensor& cache, const Tensor& src_slots, int dst_start) {
  const bool f16 = half_cache("kv_move_rows", cache);
  const int m = int(src_slots.numel());
  if (m == 0) return;
  if (m > kMoveMaxRows)
    throw std::invalid_argument("[kv_move_rows] metal: at most " + std::to_string(kMoveMaxRows) + " rows per call");
  KvCopyArgs a{m, int32_t(cache.dim(0)), int32_t(cache.dim(2)), int32_t(cache.dim(1)), dst_start};
  enc.dispatch(f16 ? "kv_move_rows_f16" : "kv_move_rows_f32", &a, sizeof a, {arg(src_slots)}, {arg(cache)},
               d3(ceil_div(a.head_dim, 32), a.n_kv_heads).v, d3(32, uint32_t(m < 8 ? m : 8)).v,
               {uint32_t(m) * 128u});
}

size_t matmul_scratch_bytes(int wtype, int64_t rows, int64_t k) {
  const int be = act_block(wtype);
  if (be == 0) return 0;
  const int64_t sums = be == 256 ? k / 16 : k / 32;
  return size_t(rows * k + rows * (k / be) * 4 + rows * sums * 4);  // qs | d | s
}

void matmul(Encoder& enc, const Tensor& x, const Tensor& w, int wtype, int n, int k, const Tensor& scratch,
            const Tensor& y) {
  const int64_t t = x.dim(0);
  MatmulArgs a{int32_t(t), n, k, wtype};
  const std::string name = matmul_kernel(wtype, t);
  const bool vec = t <= kVecMaxRows;
  const Dim3 mat_grid = d3(ceil_div(n, kMatTileX), ceil_div(t, kMatTileY)), mat_tg = d3(kMatTileX, kMatTileY);
  const int be = act_block(wtype);
  if (be == 0) {
    const Dim3 grid = vec ? d3(ceil_div(n, 2 * kVecSimdgroups), uint32_t(t)) : mat_grid;
    enc.dispatch(name, &a, sizeof a, {arg(w), arg(x)}, {arg(y)}, grid.v, vec ? d3(32 * kVecSimdgroups).v : mat_tg.v);
    return;
  }
  // Quantized activations live in one scratch tensor: qs [T, K] int8, d [T, K/be], s [T, K/32 or K/16].
  uint8_t* base = scratch.data<uint8_t>();
  const Arg qs{base, size_t(t * k)}, d{base + t * k, size_t(t * (k / be) * 4)},
      s{base + t * k + t * (k / be) * 4, size_t(t * (be == 256 ? k / 16 : k / 32) * 4)};
  enc.dispatch(be == 256 ? "quantize_q8_256" : "quantize_q8_32", &a, sizeof a, {arg(x)}, {qs, d, s},
               d3(uint32_t(k / be), uint32_t(t)).v, d3(uint32_t(be)).v);
  const Dim3 grid = vec ? d3(ceil_div(n, kVecSimdgroups), uint32_t(t)) : mat_grid;
  enc.dispatch(name, &a, sizeof a, {arg(w), qs, d, s}, {arg(y)}, grid.v, vec ? d3(32 * kVecSimdgroups).v : mat_tg.v);
}

void embedding(Encoder& enc, const Tensor& w, int wtype, int vocab, int k, const Tensor& ids, const Tensor& y) {
  EmbeddingArgs a{int32_t(ids.numel()), vocab, k, wtype};
  enc.dispatch(std::string("embedding_") + wtype_suffix(wtype), &a, sizeof a, {arg(w), arg(ids)}, {arg(y)},
               d3(ceil_div(k, kFlatThreads), uint32_t(a.rows)).v, d3(kFlatThreads).v);
}

}  // namespace eyas::metal
