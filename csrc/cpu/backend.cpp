// The CPU backend: each entry point records one dispatch whose closure runs the CPU kernel on the
// device's thread pool. Arguments were validated by the op (csrc/ops); kernels trust them.
#include "ops/backend.h"

#include <cstring>
#include <string>
#include <vector>

#include "cpu/attention.h"
#include "cpu/elementwise.h"
#include "cpu/embedding.h"
#include "cpu/gdn.h"
#include "cpu/kernels.h"
#include "cpu/kv_copy.h"
#include "cpu/matmul.h"
#include "cpu/model_misc.h"
#include "cpu/moe.h"
#include "cpu/rope.h"
#include "cpu/softmax.h"
#include "cpu/topk.h"
#include "cpu/weight_pack.h"

namespace eyas::cpu {
namespace {

// Expert e of a stacked [E, rows, cols] weight, as a 2-D view (no copy).
Tensor expert(const Tensor& w, int64_t e) {
  Tensor v = w;
  v.shape = {w.dim(1), w.dim(2)};
  v.offset = w.offset + size_t(e) * size_t(w.dim(1)) * row_bytes(w.dtype, w.dim(2));
  return v;
}

Tensor rows_of(const Tensor& t, int64_t r0, int64_t n) {
  Tensor v = t;
  v.shape[0] = n;
  v.offset = t.offset + size_t(r0) * size_t(t.dim(1)) * sizeof(float);
  return v;
}

// Closures capture raw pointers or Tensors as the kernel needs; the encoder keeps the buffers
// alive until they run. Captures up to KernelFn::kInline bytes record without an allocation.
class CpuBackend final : public ops::Backend {
 public:
  void rms_norm(Encoder& enc, const RmsNormArgs& a, const Tensor& x, const Tensor& w, const Tensor& y) override {
    enc.dispatch("rms_norm", {&x, &w}, {&y},
                 [a, xp = x.data<float>(), wp = w.data<float>(), yp = y.data<float>()](ThreadPool& pool) {
                   cpu::rms_norm(a, xp, wp, yp, pool);
                 });
  }

  void rope(Encoder& enc, const RopeArgs& a, const Tensor& x, const Tensor& positions, const Tensor& inv_freq,
            const Tensor& y) override {
    enc.dispatch("rope", {&x, &positions, &inv_freq}, {&y},
                 [a, xp = x.data<float>(), pp = positions.data<int32_t>(), fp = inv_freq.data<float>(),
                  yp = y.data<float>()](ThreadPool& pool) { cpu::rope(a, xp, pp, fp, yp, pool); });
  }

  void add(Encoder& enc, const ElementwiseArgs& args, const Tensor& a, const Tensor& b, const Tensor& y) override {
    enc.dispatch("add", {&a, &b}, {&y},
                 [args, ap = a.data<float>(), bp = b.data<float>(), yp = y.data<float>()](ThreadPool& pool) {
                   cpu::add(args, ap, bp, yp, pool);
                 });
  }

  void silu_mul(Encoder& enc, const ElementwiseArgs& args, const Tensor& gate, const Tensor& up,
                const Tensor& y) override {
    enc.dispatch("silu_mul", {&gate, &up}, {&y},
                 [args, gp = gate.data<float>(), up_ = up.data<float>(), yp = y.data<float>()](ThreadPool& pool) {
                   cpu::silu_mul(args, gp, up_, yp, pool);
                 });
  }

  void sigmoid_mul(Encoder& enc, const ElementwiseArgs& args, const Tensor& x, const Tensor& g,
                   const Tensor& y) override {
    enc.dispatch("sigmoid_mul", {&x, &g}, {&y}, [args, x, g, y](ThreadPool& pool) {
      cpu::sigmoid_mul(args, x.data<float>(), g.data<float>(), y.data<float>(), pool);
    });
  }

  void scale(Encoder& enc, const ElementwiseArgs& args, const Tensor& x, const Tensor& y) override {
    enc.dispatch("scale", {&x}, {&y}, [args, x, y](ThreadPool& pool) {
      cpu::scale(args, x.data<float>(), y.data<float>(), pool);
    });
  }

  void softmax(Encoder& enc, const SoftmaxArgs& a, const Tensor& x, const Tensor& y) override {
    enc.dispatch("softmax", {&x}, {&y},
                 [a, x, y](ThreadPool& pool) { cpu::softmax(a, x.data<float>(), y.data<float>(), pool); });
  }

  void argmax(Encoder& enc, const TopkArgs& a, const Tensor& x, const Tensor& idx) override {
    enc.dispatch("argmax", {&x}, {&idx}, [a, x, idx](ThreadPool& pool) {
      cpu::argmax(a, x.data<float>(), idx.data<int32_t>(), pool);
    });
  }

  void topk(Encoder& enc, const TopkArgs& a, const Tensor& x, const Tensor& values, const Tensor& idx) override {
    enc.dispatch("topk", {&x}, {&values, &idx}, [a, x, values, idx](ThreadPool& pool) {
      cpu::topk(a, x.data<float>(), values.data<float>(), idx.data<int32_t>(), pool);
    });
  }

  void attention(Encoder& enc, const AttentionArgs& a, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                 const Tensor& mask, const Tensor& o) override {
    enc.dispatch("attention", {&q, &k_cache, &v_cache, &mask}, {&o},
                 [a, qp = q.data<float>(), kp = k_cache.data<uint8_t>(), vp = v_cache.data<uint8_t>(),
                  f16 = k_cache.dtype == DType::F16, mp = mask.defined() ? mask.data<uint8_t>() : nullptr,
                  op = o.data<float>()](ThreadPool& pool) { cpu::attention(a, qp, kp, vp, f16, mp, op, pool); });
  }

  void attention_many(Encoder& enc, const std::vector<AttentionArgs>& args,
                      const std::vector<ops::AttentionCall>& calls) override {
    std::vector<const Tensor*> reads, writes;
    std::vector<cpu::AttentionCall> kernel_calls;
    for (size_t i = 0; i < calls.size(); ++i) {
      const ops::AttentionCall& c = calls[i];
      reads.insert(reads.end(), {&c.q, &c.k_cache, &c.v_cache, &c.mask});
      writes.push_back(&c.o);
      kernel_calls.push_back({args[i], c.q.data<float>(), c.k_cache.data<uint8_t>(), c.v_cache.data<uint8_t>(),
                              c.k_cache.dtype == DType::F16, c.mask.defined() ? c.mask.data<uint8_t>() : nullptr,
                              c.o.data<float>()});
    }
    enc.dispatch("attention", reads.data(), reads.size(), writes.data(), writes.size(),
                 [kernel_calls = std::move(kernel_calls)](ThreadPool& pool) { cpu::attention_many(kernel_calls, pool); });
  }

  void kv_write(Encoder& enc, const KvCopyArgs& a, const Tensor& kv_new, const Tensor& cache) override {
    const bool f16 = cache.dtype == DType::F16;
    enc.dispatch("kv_write", {&kv_new}, {&cache},
                 [a, f16, src = kv_new.data<float>(), dst = cache.data<uint8_t>()](ThreadPool& pool) {
                   cpu::kv_write(a, src, dst, f16, pool);
                 });
  }

  void kv_move_rows(Encoder& enc, const KvCopyArgs& a, const Tensor& cache, const Tensor& src_slots) override {
    const size_t elem_bytes = size_t(type_traits(cache.dtype).block_bytes);
    enc.dispatch("kv_move_rows", {&src_slots, &cache}, {&cache}, [a, elem_bytes, src_slots, cache](ThreadPool& pool) {
      // Slot values may come from an earlier dispatch, so they are checked when the dispatch runs.
      const int32_t* s = src_slots.data<int32_t>();
      for (int64_t i = 0; i < a.rows; ++i)
        if (s[i] < 0 || s[i] >= a.capacity)
          fail("kv_move_rows", "src_slots[" + std::to_string(i) + "] = " + std::to_string(s[i]) +
                                   " is outside the cache capacity " + std::to_string(a.capacity));
      cpu::kv_move_rows(a, s, cache.data<uint8_t>(), elem_bytes, pool);
    });
  }

  void matmul(Encoder& enc, const MatmulArgs& a, const Tensor& x, const Tensor& w, const Tensor& y) override {
    enc.dispatch("matmul", {&x, &w}, {&y}, [a, x, w, y](ThreadPool& pool) {
      // Looked up when the dispatch runs, so the pack sees the weight bytes as they are then.
      const std::shared_ptr<const uint8_t> pack = weight_pack(a, w, pool);
      cpu::matmul(a, x.data<float>(), w.data<uint8_t>(), y.data<float>(), pool, pack.get());
    });
  }

  void embedding(Encoder& enc, const EmbeddingArgs& a, const Tensor& w, const Tensor& ids, const Tensor& y) override {
    enc.dispatch("embedding", {&w, &ids}, {&y}, [a, w, ip = ids.data<int32_t>(), yp = y.data<float>()](ThreadPool& pool) {
      // A tied head's repack, looked up when the dispatch runs (it is built by the head's matmuls).
      const std::shared_ptr<const uint8_t> pack = cpu::existing_weight_pack(w, a.wtype, a.vocab, a.k);
      cpu::embedding(a, w.data<uint8_t>(), ip, yp, pool, pack.get());
    });
  }

  void copy_cols(Encoder& enc, const Tensor& x, int x_col, const Tensor& y, int y_col, int n) override {
    const int64_t rows = x.dim(0), xs = x.dim(1), ys = y.dim(1);
    enc.dispatch("copy_cols", {&x}, {&y}, [=](ThreadPool& pool) {
      cpu::copy_cols(rows, n, x.data<float>() + x_col, xs, y.data<float>() + y_col, ys, pool);
    });
  }

  void sigmoid_scale_rows(Encoder& enc, const Tensor& x, const Tensor& g, const Tensor& y) override {
    const int64_t rows = x.dim(0), n = x.dim(1);
    enc.dispatch("sigmoid_scale_rows", {&x, &g}, {&y}, [=](ThreadPool& pool) {
      cpu::sigmoid_scale_rows(rows, n, x.data<float>(), g.data<float>(), y.data<float>(), pool);
    });
  }

  void moe_route(Encoder& enc, const Tensor& logits, int top_k, bool norm, const Tensor& idx,
                 const Tensor& w) override {
    const int64_t T = logits.dim(0), E = logits.dim(1);
    enc.dispatch("moe_route", {&logits}, {&idx, &w}, [=](ThreadPool&) {
      cpu::moe_route(T, E, top_k, norm, logits.data<float>(), idx.data<int32_t>(), w.data<float>());
    });
  }

  void moe_ffn(Encoder& enc, const Tensor& x, const Tensor& logits, const Tensor& gate_exps, const Tensor& up_exps,
               const Tensor& down_exps, int top_k, bool norm, const Tensor& y) override;

  void gdn_conv(Encoder& enc, const Tensor& u, const Tensor& parents, const Tensor& conv_state, const Tensor& w,
                const Tensor& y) override {
    enc.dispatch("gdn_conv", {&u, &parents, &conv_state, &w}, {&y}, [u, parents, conv_state, w, y](ThreadPool& pool) {
      cpu::gdn_conv(int(u.dim(0)), int(u.dim(1)), int(w.dim(1)), u.data<float>(), parents.data<int32_t>(),
                    conv_state.data<float>(), w.data<float>(), y.data<float>(), pool);
    });
  }

  void gdn_conv_state(Encoder& enc, const Tensor& conv_in, const Tensor& u, const Tensor& nodes, int m,
                      const Tensor& conv_out) override {
    enc.dispatch("gdn_conv_state", {&conv_in, &u, &nodes}, {&conv_out},
                 [conv_in, u, nodes, m, conv_out](ThreadPool& pool) {
      cpu::gdn_conv_state(int(conv_in.dim(1)), int(conv_in.dim(0)) + 1, conv_in.data<float>(), u.data<float>(),
                          nodes.defined() ? nodes.data<int32_t>() : nullptr, m, conv_out.data<float>(), pool);
    });
  }

  void gdn_core(Encoder& enc, const ops::GdnDims& d, const Tensor& qkv, const Tensor& a, const Tensor& b,
                const Tensor& A, const Tensor& dt_bias, const Tensor& nodes, const Tensor& parents,
                const Tensor& state_in, const Tensor& state_out, const Tensor& o) override {
    enc.dispatch("gdn_core", {&qkv, &a, &b, &A, &dt_bias, &nodes, &parents, &state_in}, {&state_out, &o},
                 [=](ThreadPool& pool) {
                   cpu::gdn_core(d, int(o.dim(0)), qkv.data<float>(), a.data<float>(), b.data<float>(),
                                 A.data<float>(), dt_bias.data<float>(),
                                 nodes.defined() ? nodes.data<int32_t>() : nullptr, parents.data<int32_t>(),
                                 state_in.data<float>(), state_out.defined() ? state_out.data<float>() : nullptr,
                                 o.data<float>(), pool);
                 });
  }
};

void CpuBackend::moe_ffn(Encoder& enc, const Tensor& x, const Tensor& logits, const Tensor& gate_exps,
                         const Tensor& up_exps, const Tensor& down_exps, int top_k, bool norm, const Tensor& y) {
  const int64_t T = x.dim(0), H = x.dim(1), E = logits.dim(1), Ie = gate_exps.dim(1);
  Device* dev = &enc.device();
  // Routing depends on data computed earlier in the same encoder, so the expert matmuls are
  // recorded on a nested encoder when this dispatch runs.
  enc.dispatch("moe_ffn", {&x, &logits, &gate_exps, &up_exps, &down_exps}, {&y}, [=](ThreadPool& pool) {
    const int64_t n = T * top_k;
    std::vector<int32_t> idx(static_cast<size_t>(n));
    std::vector<float> w(static_cast<size_t>(n));
    cpu::moe_route(T, E, top_k, norm, logits.data<float>(), idx.data(), w.data());
    // Group the (token, slot) assignments by expert so each expert runs one matmul over its rows.
    std::vector<int64_t> count(static_cast<size_t>(E) + 1, 0), pos(static_cast<size_t>(n));
    for (int64_t a = 0; a < n; ++a) ++count[idx[a] + 1];
    for (int64_t e = 0; e < E; ++e) count[e + 1] += count[e];
    std::vector<int64_t> fill(count.begin(), count.end() - 1);
    Tensor xg = Tensor::empty(DType::F32, {n, H}), g = Tensor::empty(DType::F32, {n, Ie});
    Tensor u = Tensor::empty(DType::F32, {n, Ie}), yg = Tensor::empty(DType::F32, {n, H});
    for (int64_t a = 0; a < n; ++a) {
      pos[a] = fill[idx[a]]++;
      std::memcpy(xg.data<float>() + pos[a] * H, x.data<float>() + (a / top_k) * H, size_t(H) * sizeof(float));
    }
    Encoder inner(*dev);
    for (int64_t e = 0; e < E; ++e) {
      const int64_t r0 = count[e], m = count[e + 1] - count[e];
      if (m == 0) continue;
      Tensor xe = rows_of(xg, r0, m), ge = rows_of(g, r0, m), ue = rows_of(u, r0, m), ye = rows_of(yg, r0, m);
      matmul(inner, MatmulArgs{int32_t(m), int32_t(Ie), int32_t(H), int32_t(gate_exps.dtype)}, xe,
             expert(gate_exps, e), ge);
      matmul(inner, MatmulArgs{int32_t(m), int32_t(Ie), int32_t(H), int32_t(up_exps.dtype)}, xe, expert(up_exps, e),
             ue);
      silu_mul(inner, ElementwiseArgs{int32_t(m), int32_t(Ie), 0, 0.0f, 0}, ge, ue, ge);
      matmul(inner, MatmulArgs{int32_t(m), int32_t(H), int32_t(Ie), int32_t(down_exps.dtype)}, ge,
             expert(down_exps, e), ye);
    }
    inner.commit();
    // Weighted sum in rank order: the same float operations for a token whatever T is.
    float* out = y.data<float>();
    const float* ys = yg.data<float>();
    pool.run([&](int tid, int nth) {
      int64_t t0, t1;
      ThreadPool::split(T, tid, nth, 1, &t0, &t1);
      for (int64_t t = t0; t < t1; ++t) {
        float* o = out + t * H;
        for (int64_t h = 0; h < H; ++h) o[h] = 0.0f;
        for (int j = 0; j < top_k; ++j) {
          const float wj = w[t * top_k + j];
          const float* r = ys + pos[t * top_k + j] * H;
          for (int64_t h = 0; h < H; ++h) o[h] += wj * r[h];
        }
      }
    });
  });
}

}  // namespace
}  // namespace eyas::cpu

eyas::ops::Backend& eyas::ops::cpu_backend() {
  static cpu::CpuBackend backend;
  return backend;
}
