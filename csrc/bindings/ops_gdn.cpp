// _core.ops bindings for the Gated DeltaNet ops (ops/gdn.h).
#include "bindings/convert.h"
#include "bindings/registry.h"
#include "ops/gdn.h"

EYAS_BINDINGS(ops_gdn) {
  nb::module_ ops = bind::ops_module(m);
  ops.def(
      "gdn_conv",
      [](bind::Array u, bind::Array parents, bind::Array conv_state, bind::Array w, std::optional<Encoder*> encoder) {
        const char* op = "gdn_conv";
        Tensor tu = bind::from_numpy(op, "u", u), tp = bind::from_numpy(op, "parents", parents);
        Tensor ts = bind::from_numpy(op, "conv_state", conv_state), tw = bind::from_numpy(op, "w", w);
        Tensor ty = Tensor::empty(DType::F32, tu.shape);
        bind::encode(encoder, [&](Encoder& enc) { ops::gdn_conv(enc, tu, tp, ts, tw, ty); });
        return bind::to_numpy(ty);
      },
      "u"_a, "parents"_a, "conv_state"_a, "w"_a, nb::kw_only(), "encoder"_a = nb::none(),
      "Causal depthwise conv + SiLU over windows gathered along parents. u: float32[T, C], parents: int32[T], "
      "conv_state: float32[K-1, C] (newest row last), w: float32[C, K].");
  ops.def(
      "gdn_conv_state",
      [](bind::Array conv_in, bind::Array u, std::optional<bind::Array> nodes, std::optional<Encoder*> encoder) {
        const char* op = "gdn_conv_state";
        Tensor ti = bind::from_numpy(op, "conv_in", conv_in), tu = bind::from_numpy(op, "u", u);
        Tensor tn = nodes ? bind::from_numpy(op, "nodes", *nodes) : Tensor{};
        Tensor to = Tensor::empty(DType::F32, ti.shape);
        bind::encode(encoder, [&](Encoder& enc) { ops::gdn_conv_state(enc, ti, tu, tn, to); });
        return bind::to_numpy(to);
      },
      "conv_in"_a, "u"_a, "nodes"_a = nb::none(), nb::kw_only(), "encoder"_a = nb::none(),
      "The last K-1 rows of conv_in ++ u[nodes] (nodes: int32[m], default all rows).");
  ops.def(
      "gdn_core",
      [](bind::Array qkv, bind::Array a, bind::Array b, bind::Array A, bind::Array dt_bias, bind::Array parents,
         bind::Array state_in, int hk, int dk, std::optional<bind::Array> nodes, bool final_state, float l2_eps,
         bool tiled, std::optional<Encoder*> encoder) {
        const char* op = "gdn_core";
        Tensor tq = bind::from_numpy(op, "qkv", qkv), ta = bind::from_numpy(op, "a", a);
        Tensor tb = bind::from_numpy(op, "b", b);
        Tensor tA = bind::from_numpy(op, "A", A), tdt = bind::from_numpy(op, "dt_bias", dt_bias);
        Tensor tp = bind::from_numpy(op, "parents", parents), ts = bind::from_numpy(op, "state_in", state_in);
        Tensor tn = nodes ? bind::from_numpy(op, "nodes", *nodes) : Tensor{};
        if (ta.ndim() != 2 || tq.ndim() != 2 || tp.ndim() != 1) fail(op, "qkv and a must be 2-D, parents 1-D");
        const int64_t hv = ta.dim(1), width = tq.dim(1) - 2 * int64_t(hk) * dk;
        if (hv < 1 || width < 1 || width % hv != 0) fail(op, "qkv width does not fit Hk, Dk and Hv");
        const ops::GdnDims d{hk, dk, int32_t(hv), int32_t(width / hv), l2_eps, tiled};
        Tensor to = Tensor::empty(DType::F32, {tp.dim(0), width});
        Tensor tso = final_state ? Tensor::empty(DType::F32, ts.shape) : Tensor{};
        bind::encode(encoder, [&](Encoder& enc) { ops::gdn_core(enc, d, tq, ta, tb, tA, tdt, tn, tp, ts, tso, to); });
        if (!final_state) return nb::object(bind::to_numpy(to));
        return nb::object(nb::make_tuple(bind::to_numpy(to), bind::to_numpy(tso)));
      },
      "qkv"_a, "a"_a, "b"_a, "A"_a, "dt_bias"_a, "parents"_a, "state_in"_a, nb::kw_only(), "hk"_a, "dk"_a,
      "nodes"_a = nb::none(), "final_state"_a = false, "l2_eps"_a = 1e-6f,
      "tiled"_a = false, "encoder"_a = nb::none(),
      "Gated delta rule over nodes (each from its parent's state) -> o float32[m, Hv*Dv], and with final_state "
      "(a chain) the last node's state float32[Hv, Dk, Dv].");
}
