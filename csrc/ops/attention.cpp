#include "ops/attention.h"

#include <cmath>
#include <limits>

#include "ops/backend.h"

namespace eyas::ops {

namespace {

// Checks one call's tensors (throws "[op] ..."); its kernel arguments.
AttentionArgs checked_args(const char* op, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                           int prefix_len, const Tensor& mask, float scale, const Tensor& o) {
  check_dtype(op, "q", q, DType::F32);
  if (k_cache.dtype != DType::F16) check_dtype(op, "k_cache", k_cache, DType::F32);  // F32 or F16
  check_dtype(op, "v_cache", v_cache, k_cache.dtype);
  check_dtype(op, "o", o, DType::F32);
  check_ndim(op, "q", q, 3);
  check_ndim(op, "k_cache", k_cache, 3);
  check_writable(op, "o", o);
  if (v_cache.shape != k_cache.shape)
    fail(op, "v_cache " + v_cache.describe() + " must match k_cache " + k_cache.describe());
  if (o.shape != q.shape) fail(op, "o " + o.describe() + " must match q " + q.describe());
  const int64_t n_q = q.dim(0), n_heads = q.dim(1), D = q.dim(2);
  const int64_t n_kv = k_cache.dim(0), cap = k_cache.dim(1);
  if (D % 16 != 0 || D < 16 || D > 512)
    fail(op, "head_dim " + std::to_string(D) + " is unsupported (need a multiple of 16 in [16, 512])");
  check_dim(op, "k_cache", k_cache, 2, D);
  if (n_kv < 1 || n_heads < 1 || n_heads % n_kv != 0)
    fail(op, "query heads (" + std::to_string(n_heads) + ") must be a positive multiple of kv heads (" +
                 std::to_string(n_kv) + ")");
  if (cap > std::numeric_limits<int32_t>::max() || n_q > std::numeric_limits<int32_t>::max())
    fail(op, "cache or query count too large");
  int64_t n_new = n_q;
  if (mask.defined()) {
    check_dtype(op, "mask", mask, DType::U8);
    check_ndim(op, "mask", mask, 2);
    check_dim(op, "mask", mask, 0, n_q);
    n_new = mask.dim(1);
    if (n_new < n_q) fail(op, "mask " + mask.describe() + " needs at least as many columns (new slots) as queries");
  }
  if (prefix_len < 0) fail(op, "prefix_len must be >= 0, got " + std::to_string(prefix_len));
  if (int64_t(prefix_len) + n_new > cap)
    fail(op, "prefix_len + new slots (" + std::to_string(prefix_len) + " + " + std::to_string(n_new) +
                 ") exceeds the cache capacity " + std::to_string(cap));
  if (!(scale > 0.0f) || !std::isfinite(scale)) fail(op, "scale must be a finite positive number");
  return AttentionArgs{int32_t(n_q),   int32_t(n_new), int32_t(n_heads), int32_t(n_kv),           int32_t(D),
                       int32_t(cap),   prefix_len,     mask.defined() ? 0 : 1, scale};
}

}  // namespace

void attention(Encoder& enc, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int prefix_len,
               const Tensor& mask, float scale, const Tensor& o) {
  const char* op = "attention";
  const AttentionArgs a = checked_args(op, q, k_cache, v_cache, prefix_len, mask, scale, o);
  Backend& backend = backend_for(op, enc, {&q, &k_cache, &v_cache, &mask, &o});
  if (a.n_q == 0) return;
  backend.attention(enc, a, q, k_cache, v_cache, mask, o);
}

void attention_many(Encoder& enc, const std::vector<AttentionCall>& calls, float scale) {
  const char* op = "attention_many";
  std::vector<AttentionArgs> args;
  args.reserve(calls.size());
  for (const AttentionCall& c : calls) {
    args.push_back(checked_args(op, c.q, c.k_cache, c.v_cache, c.prefix_len, c.mask, scale, c.o));
    backend_for(op, enc, {&c.q, &c.k_cache, &c.v_cache, &c.mask, &c.o});
  }
  if (calls.empty()) return;
  if (calls.size() == 1) return attention(enc, calls[0].q, calls[0].k_cache, calls[0].v_cache, calls[0].prefix_len,
                                          calls[0].mask, scale, calls[0].o);
  backend_for(op, enc, {}).attention_many(enc, args, calls);
}

}  // namespace eyas::ops
