#include "bindings/convert.h"
#include "bindings/registry.h"
#include "ops/rope.h"

EYAS_BINDINGS(ops_rope) {
  nb::module_ ops = bind::ops_module(m);
  nb::enum_<ops::RopeStyle>(ops, "RopeStyle", "Which dims RoPE rotates together.")
      .value("neox", ops::RopeStyle::NeoX, "pairs (k, k + rot_dim/2): Llama, Qwen, SmolLM2 in HF layout")
      .value("interleaved", ops::RopeStyle::Interleaved, "pairs (2k, 2k + 1): GPT-J");
  ops.def(
      "rope",
      [](bind::Array x, bind::Array positions, bind::Array inv_freq, ops::RopeStyle style, std::optional<int> rot_dim,
         std::optional<bind::Array> out, std::optional<Encoder*> encoder) {
        const char* op = "rope";
        Tensor tx = bind::from_numpy(op, "x", x), tp = bind::from_numpy(op, "positions", positions),
               tf = bind::from_numpy(op, "inv_freq", inv_freq);
        Tensor ty = out ? bind::from_numpy(op, "out", *out) : Tensor::empty(DType::F32, tx.shape);
        const int rd = rot_dim ? *rot_dim : int(tf.ndim() == 1 ? 2 * tf.dim(0) : 0);
        bind::encode(encoder, [&](Encoder& enc) { ops::rope(enc, tx, tp, tf, rd, style, ty); });
        return bind::to_numpy(ty);
      },
      "x"_a, "positions"_a, "inv_freq"_a, "style"_a = ops::RopeStyle::NeoX, nb::kw_only(), "rot_dim"_a = nb::none(),
      "out"_a = nb::none(), "encoder"_a = nb::none(),
      "Rotary embedding of x float32[T, H, D] at positions int32[T] with inv_freq float32[rot_dim/2]\n"
      "(rope scaling is folded into inv_freq). rot_dim defaults to 2 * len(inv_freq); dims past it pass\n"
      "through. out may be x (in place).");
}
