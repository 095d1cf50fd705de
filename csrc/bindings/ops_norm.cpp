#include "bindings/convert.h"
#include "bindings/registry.h"
#include "ops/norm.h"

EYAS_BINDINGS(ops_norm) {
  nb::module_ ops = bind::ops_module(m);
  ops.def(
      "rms_norm",
      [](bind::Array x, bind::Array w, float eps, std::optional<bind::Array> out, std::optional<Encoder*> encoder) {
        const char* op = "rms_norm";
        Tensor tx = bind::from_numpy(op, "x", x), tw = bind::from_numpy(op, "w", w);
        Tensor ty = out ? bind::from_numpy(op, "out", *out) : Tensor::empty(DType::F32, tx.shape);
        bind::encode(encoder, [&](Encoder& enc) { ops::rms_norm(enc, tx, tw, ty, eps); });
        return bind::to_numpy(ty);
      },
      "x"_a, "w"_a, "eps"_a = 1e-6f, nb::kw_only(), "out"_a = nb::none(), "encoder"_a = nb::none(),
      "RMSNorm over the last axis. x: float32[..., dim], w: float32[dim].");
}
