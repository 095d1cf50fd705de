#include "ops/kv.h"

#include <limits>

#include "ops/backend.h"

namespace eyas::ops {

static void check_cache(const char* op, const Tensor& cache) {
  if (cache.dtype != DType::F16) check_dtype(op, "cache", cache, DType::F32);  // F32 or F16
  check_ndim(op, "cache", cache, 3);
  check_writable(op, "cache", cache);
  if (cache.dim(1) > std::numeric_limits<int32_t>::max()) fail(op, "cache capacity too large");
}

void kv_write(Encoder& enc, const Tensor& kv_new, const Tensor& cache, int start_slot) {
  const char* op = "kv_write";
  check_dtype(op, "kv_new", kv_new, DType::F32);
  check_ndim(op, "kv_new", kv_new, 3);
  check_cache(op, cache);
  check_dim(op, "kv_new", kv_new, 1, cache.dim(0));
  check_dim(op, "kv_new", kv_new, 2, cache.dim(2));
  const int64_t T = kv_new.dim(0), cap = cache.dim(1);
  if (start_slot < 0 || int64_t(start_slot) + T > cap)
    fail(op, "slots [" + std::to_string(start_slot) + ", " + std::to_string(start_slot + T) +
                 ") are outside the cache capacity " + std::to_string(cap));
  Backend& backend = backend_for(op, enc, {&kv_new, &cache});
  if (T == 0) return;
  const KvCopyArgs a{int32_t(T), int32_t(cache.dim(0)), int32_t(cache.dim(2)), int32_t(cap), start_slot};
  backend.kv_write(enc, a, kv_new, cache);
}

void kv_move_rows(Encoder& enc, const Tensor& cache, const Tensor& src_slots, int dst_start) {
  const char* op = "kv_move_rows";
  check_cache(op, cache);
  check_dtype(op, "src_slots", src_slots, DType::I32);
  check_ndim(op, "src_slots", src_slots, 1);
  const int64_t m = src_slots.dim(0), cap = cache.dim(1);
  if (dst_start < 0 || int64_t(dst_start) + m > cap)
    fail(op, "destination slots [" + std::to_string(dst_start) + ", " + std::to_string(dst_start + m) +
                 ") are outside the cache capacity " + std::to_string(cap));
  Backend& backend = backend_for(op, enc, {&cache, &src_slots});
  if (m == 0) return;
  const KvCopyArgs a{int32_t(m), int32_t(cache.dim(0)), int32_t(cache.dim(2)), int32_t(cap), dst_start};
  backend.kv_move_rows(enc, a, cache, src_slots);
}

}  // namespace eyas::ops
