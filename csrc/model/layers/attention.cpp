#include "model/layers/attention.h"

#include <cmath>
#include <cstring>

#include "model/layers/kv_cache.h"
#include "model/views.h"
#include "model/weights.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/kv.h"
#include "ops/matmul.h"
#include "ops/model_misc.h"
#include "ops/norm.h"
#include "ops/rope.h"

namespace eyas::model {

namespace {

// Scratch rows of every attention layer, the rope table, and one chunk's views of them.
struct AttentionWorkspace : Workspace {
  const ModelSpec& s;
  Tensor inv_freq;  // F32[rot_dim / 2]
  bool fused = false;
  int rows = 0;
  Tensor qf_buf, q_buf, gate_buf, k_buf, v_buf, o_buf, qkv_buf;
  // Views of one chunk of t rows.
  Tensor qf, q, gate_q, k, v, o, qkv;
  Tensor q3, k3, v3, o3, q_flat, k_flat, qf_heads, q_heads, gate_heads;  // reshaped
  Tensor qk3;  // one row of a fused q|k|v: q and k heads side by side, rotated by one dispatch

  explicit AttentionWorkspace(const ModelSpec& spec) : s(spec) {
    inv_freq = Tensor::empty(DType::F32, {int64_t(s.rope_inv_freq.size())});
    std::memcpy(inv_freq.data<float>(), s.rope_inv_freq.data(), inv_freq.nbytes());
  }

  void reserve(int n) override {
    if (n <= rows) return;
    const int64_t D = s.head_dim, Hq = s.num_heads, Hkv = s.num_kv_heads;
    auto f32 = [&](int64_t cols) { return Tensor::empty(DType::F32, {n, cols}); };
    rows = n;
    qf_buf = f32(Hq * D * (s.attn_output_gate ? 2 : 1));
    q_buf = s.attn_output_gate ? f32(Hq * D) : qf_buf;
    if (s.attn_output_gate) gate_buf = f32(Hq * D);
    k_buf = f32(Hkv * D), v_buf = f32(Hkv * D), o_buf = f32(Hq * D);
    if (fused) qkv_buf = f32(qf_buf.dim(1) + 2 * Hkv * D);
  }

  void bind(Encoder& enc, int t) override {
    const int64_t D = s.head_dim, Hq = s.num_heads, Hkv = s.num_kv_heads;
    qf = model::rows(qf_buf, 0, t), k = model::rows(k_buf, 0, t), v = model::rows(v_buf, 0, t);
    o = model::rows(o_buf, 0, t);
    if (qkv_buf.defined()) qkv = model::rows(qkv_buf, 0, t);
    // One row: the fused output's columns are the q/k/v inputs, as views (no copy dispatch).
    if (t == 1 && qkv.defined()) split_cols(enc, qkv, {&qf, &k, &v});
    q = qf;
    if (s.attn_output_gate) {
      q = model::rows(q_buf, 0, t), gate_q = model::rows(gate_buf, 0, t);
      qf_heads = reshape(qf, {t * Hq, 2 * D}), q_heads = reshape(q, {t * Hq, D});
      gate_heads = reshape(gate_q, {t * Hq, D});
    }
    q3 = reshape(q, {t, Hq, D}), k3 = reshape(k, {t, Hkv, D}), v3 = reshape(v, {t, Hkv, D});
    o3 = reshape(o, {t, Hq, D});
    q_flat = reshape(q, {t * Hq, D}), k_flat = reshape(k, {t * Hkv, D});
    qk3 = (t == 1 && qkv.defined() && !s.attn_output_gate) ? reshape(qkv, {1, Hq + Hkv, D}) : Tensor{};
  }
};

class Attention : public Layer {
 public:
  explicit Attention(const LayerInit& init);
  std::unique_ptr<Workspace> make_workspace() const override;
  void join(Workspace& ws) const override;
  std::unique_ptr<LayerState> make_state(const StateInit& init) const override;
  // Writes the chunk's K/V at slots slot0.. of its KVCache, attends over prefix + visible new slots.
  void encode(Encoder& enc, const Chunk& c, Workspace& ws, LayerState* state) const override;
  // The same with each segment's rows written to and attending over its own sequence's KVCache.
  void encode_segments(Encoder& enc, const Chunk& c, Workspace& ws, const std::vector<LayerState*>& states) const override;

 private:
  // Norm, q|k|v, biases, q/k norms and rope over all the chunk's rows (each row on its own).
  void project(Encoder& enc, const Chunk& c, const AttentionWorkspace& w) const;
  // Output gate, o projection and the residual add over all the chunk's rows.
  void finish(Encoder& enc, const Chunk& c, const AttentionWorkspace& w) const;
  const ModelSpec& spec_;  // owned by the Transformer, which outlives its layers
  Tensor attn_norm_, wq_, wk_, wv_, bq_, bk_, bv_, q_norm_, k_norm_, wo_;
  Tensor wqkv_, bqkv_;  // fused q|k|v (when fuse and the three share a type)
};

}  // namespace

Attention::Attention(const LayerInit& init) : spec_(init.spec) {
  const ModelSpec& s = spec_;
  const WeightMap& w = init.weights;
  const std::string p = "blk." + std::to_string(init.block) + ".";
  const int64_t H = s.hidden_size, D = s.head_dim;
  const int64_t q_rows = int64_t(s.num_heads) * D * (s.attn_output_gate ? 2 : 1), kv_rows = int64_t(s.num_kv_heads) * D;
  attn_norm_ = take(w, p + "attn_norm", {H}, true);
  wq_ = take(w, p + "attn_q", {q_rows, H}, false);
  wk_ = take(w, p + "attn_k", {kv_rows, H}, false);
  wv_ = take(w, p + "attn_v", {kv_rows, H}, false);
  if (s.qkv_bias) {
    bq_ = take(w, p + "attn_q.bias", {q_rows}, true);
    bk_ = take(w, p + "attn_k.bias", {kv_rows}, true);
    bv_ = take(w, p + "attn_v.bias", {kv_rows}, true);
  }
  if (s.qk_norm) {
    q_norm_ = take(w, p + "attn_q_norm", {D}, true);
    k_norm_ = take(w, p + "attn_k_norm", {D}, true);
  }
  if (init.fuse && wq_.dtype == wk_.dtype && wq_.dtype == wv_.dtype) {
    wqkv_ = concat_rows({&wq_, &wk_, &wv_});
    if (s.qkv_bias) bqkv_ = concat_rows({&bq_, &bk_, &bv_});
  }
  wo_ = take(w, p + "attn_output", {H, int64_t(s.num_heads) * D}, false);
}

std::unique_ptr<Workspace> Attention::make_workspace() const { return std::make_unique<AttentionWorkspace>(spec_); }

void Attention::join(Workspace& ws) const {
  static_cast<AttentionWorkspace&>(ws).fused |= wqkv_.defined();
}

std::unique_ptr<LayerState> Attention::make_state(const StateInit& init) const {
  return std::make_unique<KVCache>(spec_.num_kv_heads, init.capacity, spec_.head_dim, init.kv_dtype);
}

void Attention::project(Encoder& enc, const Chunk& c, const AttentionWorkspace& w) const {
  const ModelSpec& s = spec_;
  const int64_t D = s.head_dim;
  const float eps = s.rms_eps;
  ops::rms_norm(enc, c.x, attn_norm_, c.xn, eps);
  if (wqkv_.defined()) {
    ops::matmul(enc, c.xn, wqkv_, w.qkv);
    if (s.qkv_bias) ops::add(enc, w.qkv, bqkv_, w.qkv);
    if (c.t > 1) {
      Tensor qf = w.qf, k = w.k, v = w.v;
      split_cols(enc, w.qkv, {&qf, &k, &v});
    }
  } else {
    ops::matmul(enc, c.xn, wq_, w.qf);
    ops::matmul(enc, c.xn, wk_, w.k);
    ops::matmul(enc, c.xn, wv_, w.v);
  }
  if (s.qkv_bias && !wqkv_.defined()) {
    ops::add(enc, w.qf, bq_, w.qf);
    ops::add(enc, w.k, bk_, w.k);
    ops::add(enc, w.v, bv_, w.v);
  }
  if (s.attn_output_gate) {
    // attn_q rows are per head [q (D) | gate (D)].
    ops::copy_cols(enc, w.qf_heads, 0, w.q_heads, 0, int(D));
    ops::copy_cols(enc, w.qf_heads, int(D), w.gate_heads, 0, int(D));
  }
  if (s.qk_norm) {
    ops::rms_norm(enc, w.q_flat, q_norm_, w.q_flat, eps);
    ops::rms_norm(enc, w.k_flat, k_norm_, w.k_flat, eps);
  }
  if (w.qk3.defined() && wqkv_.defined()) {
    // Rope rotates each (token, head) row on its own, so one call over q|k gives the same bits.
    ops::rope(enc, w.qk3, c.pos, w.inv_freq, s.rot_dim, s.rope_style, w.qk3);
  } else {
    ops::rope(enc, w.q3, c.pos, w.inv_freq, s.rot_dim, s.rope_style, w.q3);
    ops::rope(enc, w.k3, c.pos, w.inv_freq, s.rot_dim, s.rope_style, w.k3);
  }
}

void Attention::finish(Encoder& enc, const Chunk& c, const AttentionWorkspace& w) const {
  if (spec_.attn_output_gate) ops::sigmoid_mul(enc, w.o, w.gate_q, w.o);
  ops::matmul(enc, w.o, wo_, c.proj);
  ops::add(enc, c.x, c.proj, c.x);
}

void Attention::encode(Encoder& enc, const Chunk& c, Workspace& workspace, LayerState* state) const {
  const AttentionWorkspace& w = static_cast<const AttentionWorkspace&>(workspace);
  const KVCache& kv = static_cast<const KVCache&>(*state);
  project(enc, c, w);
  ops::kv_write(enc, w.k3, kv.k(), c.slot0);
  ops::kv_write(enc, w.v3, kv.v(), c.slot0);
  ops::attention(enc, w.q3, kv.k(), kv.v(), c.prefix, c.mask, 1.0f / std::sqrt(float(spec_.head_dim)), w.o3);
  finish(enc, c, w);
}

void Attention::encode_segments(Encoder& enc, const Chunk& c, Workspace& workspace,
                                const std::vector<LayerState*>& states) const {
  const AttentionWorkspace& w = static_cast<const AttentionWorkspace&>(workspace);
  const int64_t D = spec_.head_dim, Hq = spec_.num_heads, Hkv = spec_.num_kv_heads;
  project(enc, c, w);
  std::vector<ops::AttentionCall> calls;
  calls.reserve(c.segments.size());
  for (size_t i = 0; i < c.segments.size(); ++i) {
    const Segment& g = c.segments[i];
    const KVCache& kv = static_cast<const KVCache&>(*states[i]);
    ops::kv_write(enc, rows(w.k, g.row0, g.t, {Hkv, D}), kv.k(), g.slot0);
    ops::kv_write(enc, rows(w.v, g.row0, g.t, {Hkv, D}), kv.v(), g.slot0);
    calls.push_back({rows(w.q, g.row0, g.t, {Hq, D}), kv.k(), kv.v(), g.prefix, g.mask, rows(w.o, g.row0, g.t, {Hq, D})});
  }
  // One dispatch for every sequence: a decode row's attention alone is too small to use the threads.
  ops::attention_many(enc, calls, 1.0f / std::sqrt(float(D)));
  finish(enc, c, w);
}

std::unique_ptr<Layer> build_attention(const LayerInit& init) { return std::make_unique<Attention>(init); }

}  // namespace eyas::model
