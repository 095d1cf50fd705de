#include "bindings/convert.h"
#include "bindings/registry.h"
#include "ops/elementwise.h"

namespace {
using Binary = void (*)(Encoder&, const Tensor&, const Tensor&, const Tensor&);

template <Binary F>
nb::object binary(const char* op, const char* na, const char* nb_, bind::Array a, bind::Array b,
                  std::optional<bind::Array> out, std::optional<Encoder*> encoder) {
  Tensor ta = bind::from_numpy(op, na, a), tb = bind::from_numpy(op, nb_, b);
  Tensor ty = out ? bind::from_numpy(op, "out", *out) : Tensor::empty(DType::F32, ta.shape);
  bind::encode(encoder, [&](Encoder& enc) { F(enc, ta, tb, ty); });
  return bind::to_numpy(ty);
}
}  // namespace

EYAS_BINDINGS(ops_elementwise) {
  nb::module_ ops = bind::ops_module(m);
  ops.def(
      "add",
      [](bind::Array a, bind::Array b, std::optional<bind::Array> out, std::optional<Encoder*> encoder) {
        return binary<ops::add>("add", "a", "b", a, b, out, encoder);
      },
      "a"_a, "b"_a, nb::kw_only(), "out"_a = nb::none(), "encoder"_a = nb::none(),
      "a + b; b has a's shape or is one row float32[N] added to every row of a float32[..., N].");
  ops.def(
      "silu_mul",
      [](bind::Array gate, bind::Array up, std::optional<bind::Array> out, std::optional<Encoder*> encoder) {
        return binary<ops::silu_mul>("silu_mul", "gate", "up", gate, up, out, encoder);
      },
      "gate"_a, "up"_a, nb::kw_only(), "out"_a = nb::none(), "encoder"_a = nb::none(),
      "silu(gate) * up, elementwise (float32, same shapes).");
  ops.def(
      "silu_mul_halves",
      [](bind::Array gu, std::optional<bind::Array> out, std::optional<Encoder*> encoder) {
        const char* op = "silu_mul_halves";
        Tensor tg = bind::from_numpy(op, "gu", gu);
        if (tg.ndim() != 2) fail(op, "gu " + tg.describe() + " must be float32[T, 2I]");
        Tensor ty = out ? bind::from_numpy(op, "out", *out) : Tensor::empty(DType::F32, {tg.dim(0), tg.dim(1) / 2});
        bind::encode(encoder, [&](Encoder& enc) { ops::silu_mul_halves(enc, tg, ty); });
        return bind::to_numpy(ty);
      },
      "gu"_a, nb::kw_only(), "out"_a = nb::none(), "encoder"_a = nb::none(),
      "silu(gu[:, :I]) * gu[:, I:] for gu float32[T, 2I] (the halves of a fused gate|up projection's rows).");
  ops.def(
      "sigmoid_mul",
      [](bind::Array x, bind::Array g, std::optional<bind::Array> out, std::optional<Encoder*> encoder) {
        return binary<ops::sigmoid_mul>("sigmoid_mul", "x", "g", x, g, out, encoder);
      },
      "x"_a, "g"_a, nb::kw_only(), "out"_a = nb::none(), "encoder"_a = nb::none(),
      "x * sigmoid(g), elementwise (gated attention output; float32, same shapes).");
  ops.def(
      "scale",
      [](bind::Array x, float s, std::optional<bind::Array> out, std::optional<Encoder*> encoder) {
        const char* op = "scale";
        Tensor tx = bind::from_numpy(op, "x", x);
        Tensor ty = out ? bind::from_numpy(op, "out", *out) : Tensor::empty(DType::F32, tx.shape);
        bind::encode(encoder, [&](Encoder& enc) { ops::scale(enc, tx, s, ty); });
        return bind::to_numpy(ty);
      },
      "x"_a, "s"_a, nb::kw_only(), "out"_a = nb::none(), "encoder"_a = nb::none(), "x * s, elementwise.");
}
