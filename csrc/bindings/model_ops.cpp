// _core.ops bindings for the model helper ops (copy_cols, sigmoid_scale_rows, moe_route, moe_ffn).
#include "bindings/convert.h"
#include "bindings/registry.h"
#include "ops/model_misc.h"
#include "ops/moe.h"

EYAS_BINDINGS(model_ops) {
  nb::module_ ops = bind::ops_module(m);
  ops.def(
      "copy_cols",
      [](bind::Array x, int x_col, bind::Array out, int y_col, int n, std::optional<Encoder*> encoder) {
        const char* op = "copy_cols";
        Tensor tx = bind::from_numpy(op, "x", x), ty = bind::from_numpy(op, "out", out);
        bind::encode(encoder, [&](Encoder& enc) { ops::copy_cols(enc, tx, x_col, ty, y_col, n); });
        return bind::to_numpy(ty);
      },
      "x"_a, "x_col"_a, "out"_a, "y_col"_a, "n"_a, nb::kw_only(), "encoder"_a = nb::none(),
      "out[:, y_col:y_col+n] = x[:, x_col:x_col+n] (float32 2-D arrays with equal row counts).");
  ops.def(
      "sigmoid_scale_rows",
      [](bind::Array x, bind::Array g, std::optional<bind::Array> out, std::optional<Encoder*> encoder) {
        const char* op = "sigmoid_scale_rows";
        Tensor tx = bind::from_numpy(op, "x", x), tg = bind::from_numpy(op, "g", g);
        Tensor ty = out ? bind::from_numpy(op, "out", *out) : Tensor::empty(DType::F32, tx.shape);
        bind::encode(encoder, [&](Encoder& enc) { ops::sigmoid_scale_rows(enc, tx, tg, ty); });
        return bind::to_numpy(ty);
      },
      "x"_a, "g"_a, nb::kw_only(), "out"_a = nb::none(), "encoder"_a = nb::none(),
      "x * sigmoid(g) per row. x: float32[R, N], g: float32[R, 1].");
  ops.def(
      "moe_route",
      [](bind::Array logits, int top_k, bool norm_topk_prob, std::optional<Encoder*> encoder) {
        const char* op = "moe_route";
        Tensor tl = bind::from_numpy(op, "router_logits", logits);
        if (tl.ndim() != 2) fail(op, "router_logits must be 2-D, got " + tl.describe());
        Tensor idx = Tensor::empty(DType::I32, {tl.dim(0), std::max(top_k, 0)});
        Tensor w = Tensor::empty(DType::F32, {tl.dim(0), std::max(top_k, 0)});
        bind::encode(encoder, [&](Encoder& enc) { ops::moe_route(enc, tl, top_k, norm_topk_prob, idx, w); });
        return nb::make_tuple(bind::to_numpy(idx), bind::to_numpy(w));
      },
      "router_logits"_a, "top_k"_a, "norm_topk_prob"_a, nb::kw_only(), "encoder"_a = nb::none(),
      "Softmax router -> (expert ids int32[T, k], weights float32[T, k]), highest first.");
  ops.def(
      "moe_ffn",
      [](bind::Array x, bind::Array logits, bind::Array gate_exps, bind::Array up_exps, bind::Array down_exps, int top_k,
         bool norm_topk_prob, std::optional<Encoder*> encoder) {
        const char* op = "moe_ffn";
        Tensor tx = bind::from_numpy(op, "x", x), tl = bind::from_numpy(op, "router_logits", logits);
        Tensor tg = bind::from_numpy(op, "gate_exps", gate_exps), tu = bind::from_numpy(op, "up_exps", up_exps);
        Tensor td = bind::from_numpy(op, "down_exps", down_exps);
        Tensor ty = Tensor::empty(DType::F32, tx.shape);
        bind::encode(encoder,
                     [&](Encoder& enc) { ops::moe_ffn(enc, tx, tl, tg, tu, td, top_k, norm_topk_prob, ty); });
        return bind::to_numpy(ty);
      },
      "x"_a, "router_logits"_a, "gate_exps"_a, "up_exps"_a, "down_exps"_a, "top_k"_a, "norm_topk_prob"_a,
      nb::kw_only(), "encoder"_a = nb::none(),
      "MoE feed-forward with float32 expert stacks gate/up [E, Ie, H], down [E, H, Ie].");
}
