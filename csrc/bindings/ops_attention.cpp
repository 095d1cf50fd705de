#include <cmath>

#include "bindings/convert.h"
#include "bindings/registry.h"
#include "ops/attention.h"
#include "ops/cpu_controls.h"
#include "ops/host_rows.h"

EYAS_BINDINGS(ops_attention) {
  nb::module_ ops = bind::ops_module(m);
  ops.def(
      "attention",
      [](bind::Array q, bind::Array k_cache, bind::Array v_cache, int prefix_len, std::optional<bind::Array> mask,
         std::optional<float> scale, std::optional<bind::Array> out, std::optional<Encoder*> encoder) {
        const char* op = "attention";
        Tensor tq = bind::from_numpy(op, "q", q), tk = bind::from_numpy(op, "k_cache", k_cache),
               tv = bind::from_numpy(op, "v_cache", v_cache);
        Tensor tm = mask ? bind::from_numpy(op, "mask", *mask) : Tensor{};
        Tensor to = out ? bind::from_numpy(op, "out", *out) : Tensor::empty(DType::F32, tq.shape);
        const float s = scale ? *scale : (tq.ndim() == 3 ? float(1.0 / std::sqrt(double(tq.dim(2)))) : 1.0f);
        bind::encode(encoder, [&](Encoder& enc) { ops::attention(enc, tq, tk, tv, prefix_len, tm, s, to); });
        return bind::to_numpy(to);
      },
      "q"_a, "k_cache"_a, "v_cache"_a, "prefix_len"_a, "mask"_a = nb::none(), nb::kw_only(), "scale"_a = nb::none(),
      "out"_a = nb::none(), "encoder"_a = nb::none(),
      "Tree attention over a slot-major KV cache (docs/kv_cache.md).\n\n"
      "q: float32[Tq, Hq, D]; k_cache, v_cache: float32[Hkv, capacity, D]; new slots\n"
      "[prefix_len, prefix_len + Tn) already hold K/V and the queries are the last Tq of them.\n"
      "mask: uint8/bool[Tq, Tn] (query i sees new slot j where nonzero) or None = causal (Tn = Tq).\n"
      "scale defaults to 1/sqrt(D). Returns float32[Tq, Hq, D].");
  ops.def(
      "attention_many",
      [](nb::list calls, float scale, std::optional<Encoder*> encoder) {
        const char* op = "attention_many";
        std::vector<ops::AttentionCall> cs;
        for (nb::handle h : calls) {
          nb::dict d = nb::cast<nb::dict>(h);
          auto arr = [&](const char* key) { return bind::from_numpy(op, key, nb::cast<bind::Array>(d[key])); };
          ops::AttentionCall c{arr("q"), arr("k_cache"), arr("v_cache"), nb::cast<int>(d["prefix_len"]), Tensor{}, Tensor{}};
          if (d.contains("mask") && !d["mask"].is_none()) c.mask = arr("mask");
          c.o = Tensor::empty(DType::F32, c.q.shape);
          cs.push_back(std::move(c));
        }
        bind::encode(encoder, [&](Encoder& enc) { ops::attention_many(enc, cs, scale); });
        nb::list out;
        for (const ops::AttentionCall& c : cs) out.append(bind::to_numpy(c.o));
        return out;
      },
      "calls"_a, "scale"_a, nb::kw_only(), "encoder"_a = nb::none(),
      "Several attention() calls with one scale in one dispatch. calls: dicts with q, k_cache, v_cache,\n"
      "prefix_len and optionally mask (as attention()'s arguments). Returns one float32[Tq, Hq, D] per call.");
  ops.def("_force_scalar", &ops::force_scalar_kernels, "on"_a,
          "Testing knob: run the rope/elementwise/softmax/top-k/attention kernels and the F16 KV write on their "
          "scalar paths.");
  ops.def("_cap_simd", &ops::cap_simd_kernels, "level"_a,
          "Testing knob: cap the same kernels at a SIMD level, 'scalar', 'avx2' or 'avx512' (the default).");
  ops.def("_simd_levels", &ops::available_simd_levels,
          "The SIMD levels of those kernels this CPU runs, slowest first (resets the cap to the best).");
  ops.def(
      "_dot16_rows",
      [](bind::Array w, bind::Array x) {
        const char* op = "_dot16_rows";
        Tensor tw = bind::from_numpy(op, "w", w), tx = bind::from_numpy(op, "x", x);
        check_dtype(op, "w", tw, DType::F32), check_dtype(op, "x", tx, DType::F32);
        check_ndim(op, "w", tw, 2), check_ndim(op, "x", tx, 1), check_dim(op, "x", tx, 0, tw.dim(1));
        Tensor out = Tensor::empty(DType::F32, {tw.dim(0)});
        for (int64_t r = 0; r < tw.dim(0); ++r)
          out.data<float>()[r] = ops::dot16_row_host(tw.data<float>() + r * tw.dim(1), tx.data<float>(), tw.dim(1));
        return bind::to_numpy(out);
      },
      "w"_a, "x"_a,
      "Testing hook: the draft head's host dot (rescored rows) of each row of float32 w[N, K] with x[K], in 16\n"
      "lanes folded in lane order; the same bits on every SIMD level.");
}
