#include <nanobind/stl/pair.h>

#include "bindings/convert.h"
#include "bindings/registry.h"
#include "ops/softmax.h"

EYAS_BINDINGS(ops_softmax) {
  nb::module_ ops = bind::ops_module(m);
  ops.def(
      "softmax",
      [](bind::Array x, float temperature, bool log, std::optional<bind::Array> out, std::optional<Encoder*> encoder) {
        const char* op = "softmax";
        Tensor tx = bind::from_numpy(op, "x", x);
        Tensor ty = out ? bind::from_numpy(op, "out", *out) : Tensor::empty(DType::F32, tx.shape);
        bind::encode(encoder, [&](Encoder& enc) { ops::softmax(enc, tx, temperature, log, ty); });
        return bind::to_numpy(ty);
      },
      "x"_a, "temperature"_a = 1.0f, nb::kw_only(), "log"_a = false, "out"_a = nb::none(), "encoder"_a = nb::none(),
      "Softmax (or log-softmax) of x / temperature over the last axis. x: float32[rows, N].");
  ops.def(
      "argmax",
      [](bind::Array x, std::optional<Encoder*> encoder) {
        Tensor tx = bind::from_numpy("argmax", "x", x);
        Tensor ti = Tensor::empty(DType::I32, {tx.ndim() == 2 ? tx.dim(0) : 0});
        bind::encode(encoder, [&](Encoder& enc) { ops::argmax(enc, tx, ti); });
        return bind::to_numpy(ti);
      },
      "x"_a, nb::kw_only(), "encoder"_a = nb::none(),
      "First index of each row's maximum. x: float32[rows, N] -> int32[rows].");
  ops.def(
      "topk",
      [](bind::Array x, int k, std::optional<Encoder*> encoder) {
        Tensor tx = bind::from_numpy("topk", "x", x);
        const int64_t rows = tx.ndim() == 2 ? tx.dim(0) : 0, kk = std::max(k, 0);
        Tensor tv = Tensor::empty(DType::F32, {rows, kk}), ti = Tensor::empty(DType::I32, {rows, kk});
        bind::encode(encoder, [&](Encoder& enc) { ops::topk(enc, tx, k, tv, ti); });
        return std::make_pair(bind::to_numpy(tv), bind::to_numpy(ti));
      },
      "x"_a, "k"_a, nb::kw_only(), "encoder"_a = nb::none(),
      "The k largest values per row, sorted descending, ties to the lower index. x: float32[rows, N] -> "
      "(float32[rows, k], int32[rows, k]).");
}
