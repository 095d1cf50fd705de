#include "ops/embedding.h"

#include <climits>

#include "ops/backend.h"
#include "ops/matmul.h"

namespace eyas::ops {

void embedding(Encoder& enc, const Tensor& w, const Tensor& ids, const Tensor& y) {
  const char* op = "embedding";
  if (!w.defined()) fail(op, "w is missing");
  if (!matmul_supports(w.dtype)) fail(op, "unsupported table type " + w.describe());
  check_ndim(op, "w", w, 2);
  check_dtype(op, "ids", ids, DType::I32);
  check_ndim(op, "ids", ids, 1);
  check_dtype(op, "y", y, DType::F32);
  check_ndim(op, "y", y, 2);
  const int64_t V = w.dim(0), K = w.dim(1), T = ids.dim(0);
  if (V < 1 || K < 1) fail(op, "empty table " + w.describe());
  const int be = type_traits(w.dtype).block_elems;
  if (K % be != 0)
    fail(op, "K=" + std::to_string(K) + " is not a multiple of the " + type_traits(w.dtype).name + " block size " +
                 std::to_string(be));
  check_dim(op, "y", y, 0, T);
  check_dim(op, "y", y, 1, K);
  if (T > INT32_MAX || V > INT32_MAX || K > INT32_MAX) fail(op, "dimensions must fit in int32");
  for (const Tensor* t : {&w, &ids, &y})
    if (t->offset + t->nbytes() > t->buffer->size()) fail(op, t->describe() + " is larger than its buffer");
  check_writable(op, "y", y);
  Backend& backend = backend_for(op, enc, {&w, &ids, &y});
  const int32_t* id = ids.data<int32_t>();
  for (int64_t t = 0; t < T; ++t)
    if (id[t] < 0 || id[t] >= V)
      fail(op, "id " + std::to_string(id[t]) + " at position " + std::to_string(t) + " is outside [0, " +
                   std::to_string(V) + ")");
  backend.embedding(enc, EmbeddingArgs{int32_t(T), int32_t(V), int32_t(K), int32_t(w.dtype)}, w, ids, y);
}

}  // namespace eyas::ops
