#include "ops/moe.h"

#include <climits>
#include <tuple>
#include <vector>

#include "ops/backend.h"
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
  backend_for(op, enc, {&logits, &idx, &w}).moe_route(enc, logits, top_k, norm, idx, w);
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
    // What matmul checks for each expert's slice, checked here once: backends run the experts'
    // matmuls without the op's checks.
    if (!matmul_supports(t->dtype)) fail(op, std::string(name) + ": unsupported weight type " + t->describe());
    if (cols % type_traits(t->dtype).block_elems != 0)
      fail(op, std::string(name) + ": " + std::to_string(cols) + " columns are not a multiple of the " +
                   type_traits(t->dtype).name + " block size " + std::to_string(type_traits(t->dtype).block_elems));
    if (t->offset + t->nbytes() > t->buffer->size()) fail(op, t->describe() + " is larger than its buffer");
  }
  if (T * top_k > INT32_MAX || H > INT32_MAX || Ie > INT32_MAX) fail(op, "dimensions must fit in int32");
  backend_for(op, enc, {&x, &logits, &gate_exps, &up_exps, &down_exps, &y})
      .moe_ffn(enc, x, logits, gate_exps, up_exps, down_exps, top_k, norm, y);
}

}  // namespace eyas::ops
