#include "model/layers/gdn.h"

#include "model/layers/gdn_state.h"
#include "model/views.h"
#include "model/weights.h"
#include "ops/elementwise.h"
#include "ops/gdn.h"
#include "ops/matmul.h"
#include "ops/model_misc.h"
#include "ops/norm.h"

namespace eyas::model {

namespace {

ops::GdnDims dims_of(const ModelSpec& s) {
  const GdnSpec& g = s.gdn;
  return ops::GdnDims{g.num_k_heads, g.k_head_dim, g.num_v_heads, g.v_head_dim, g.l2_eps, g.tiled_heads};
}

// Scratch rows every gdn layer reuses: the output gate z, the core's output o, and the update inputs
// of forwards the states do not keep (GdnState::kKeepRows).
struct GdnWorkspace : Workspace {
  int64_t width, heads, dv, channels;  // Hv * Dv, Hv, Dv, C
  int rows = 0;
  Tensor z_buf, o_buf, u_buf, qkv_buf, a_buf, b_buf;  // F32[rows, Hv*Dv] x2, F32[rows, C] x2, F32[rows, Hv] x2
  Tensor z, o, o_heads, z_heads;  // one chunk's rows; *_heads: F32[t*Hv, Dv]
  GdnRows shared;

  explicit GdnWorkspace(const GdnSpec& g)
      : width(int64_t(g.num_v_heads) * g.v_head_dim), heads(g.num_v_heads), dv(g.v_head_dim),
        channels(2 * int64_t(g.num_k_heads) * g.k_head_dim + width) {}

  void reserve(int n) override {
    if (n <= rows) return;
    rows = n;
    auto f32 = [&](int64_t cols) { return Tensor::empty(DType::F32, {n, cols}); };
    z_buf = f32(width), o_buf = f32(width), u_buf = f32(channels), qkv_buf = f32(channels);
    a_buf = f32(heads), b_buf = f32(heads);
  }

  void bind(Encoder&, int t) override {
    z = model::rows(z_buf, 0, t), o = model::rows(o_buf, 0, t);
    z_heads = reshape(z, {t * heads, dv}), o_heads = reshape(o, {t * heads, dv});
    shared = {model::rows(u_buf, 0, t), model::rows(qkv_buf, 0, t), model::rows(a_buf, 0, t), model::rows(b_buf, 0, t)};
  }
};

class Gdn : public Layer {
 public:
  explicit Gdn(const LayerInit& init);
  std::unique_ptr<Workspace> make_workspace() const override { return std::make_unique<GdnWorkspace>(spec_.gdn); }
  std::unique_ptr<LayerState> make_state(const StateInit&) const override {
    return std::make_unique<GdnState>(dims_of(spec_), spec_.gdn.conv_kernel, A_, dt_bias_);
  }
  void encode(Encoder& enc, const Chunk& c, Workspace& ws, LayerState* state) const override;
  // Several sequences: the projections over every row at once, then each sequence's recurrence from
  // its own state, then the output half over every row (each row's bits are those of its forward alone).
  void encode_segments(Encoder& enc, const Chunk& c, Workspace& ws, const std::vector<LayerState*>& states) const override;

 private:
  // x -> r.u, r.a, r.b and the output gate z (every row of the chunk).
  void project(Encoder& enc, const Chunk& c, const GdnRows& r, const Tensor& z) const;
  // One sequence's conv, delta rule and conv window over its rows; o: F32[t, Hv*Dv].
  void recur(Encoder& enc, const GdnState::ChunkIo& io, const Tensor& o) const;
  // Per head RMSNorm(o) * w * silu(z), the out projection and the residual (every row of the chunk).
  void finish(Encoder& enc, const Chunk& c, const GdnWorkspace& w) const;

  const ModelSpec& spec_;  // owned by the Transformer, which outlives its layers
  ops::GdnDims d_;
  Tensor attn_norm_, w_qkv_, w_z_, w_b_, w_a_, conv_w_, dt_bias_, A_, norm_, w_out_;
};

}  // namespace

Gdn::Gdn(const LayerInit& init) : spec_(init.spec), d_(dims_of(init.spec)) {
  const WeightMap& w = init.weights;
  const std::string p = "blk." + std::to_string(init.block) + ".";
  const int64_t H = spec_.hidden_size, Hv = d_.hv, Vw = int64_t(d_.hv) * d_.dv;
  const int64_t C = 2 * int64_t(d_.hk) * d_.dk + Vw;
  attn_norm_ = take(w, p + "attn_norm", {H}, true);
  w_qkv_ = take(w, p + "attn_qkv", {C, H}, false);
  w_z_ = take(w, p + "attn_gate", {Vw, H}, false);
  w_b_ = take(w, p + "ssm_beta", {Hv, H}, false);
  w_a_ = take(w, p + "ssm_alpha", {Hv, H}, false);
  conv_w_ = take(w, p + "ssm_conv1d", {C, spec_.gdn.conv_kernel}, true);
  dt_bias_ = take(w, p + "ssm_dt.bias", {Hv}, true);
  A_ = take(w, p + "ssm_a", {Hv}, true);
  norm_ = take(w, p + "ssm_norm", {d_.dv}, true);
  w_out_ = take(w, p + "ssm_out", {H, Vw}, false);
}

void Gdn::project(Encoder& enc, const Chunk& c, const GdnRows& r, const Tensor& z) const {
  ops::rms_norm(enc, c.x, attn_norm_, c.xn, spec_.rms_eps);
  ops::matmul(enc, c.xn, w_qkv_, r.u);
  ops::matmul(enc, c.xn, w_z_, z);
  ops::matmul(enc, c.xn, w_b_, r.b);
  ops::matmul(enc, c.xn, w_a_, r.a);
}

void Gdn::recur(Encoder& enc, const GdnState::ChunkIo& io, const Tensor& o) const {
  const GdnRows& r = io.rows;
  ops::gdn_conv(enc, r.u, io.parents, io.conv_in, conv_w_, r.qkv);
  // After the conv has read conv_in (which may be the working window itself: the encoder then puts a
  // barrier between them). Recorded before the core so that, into another buffer (a decode step's),
  // it runs in the conv's group while the window and u are still in cache.
  if (io.conv_out.defined()) ops::gdn_conv_state(enc, io.conv_in, r.u, Tensor{}, io.conv_out);
  ops::gdn_core(enc, d_, r.qkv, r.a, r.b, A_, dt_bias_, Tensor{}, io.parents, io.state_in, io.state_out, o);
}

void Gdn::finish(Encoder& enc, const Chunk& c, const GdnWorkspace& w) const {
  ops::rms_norm(enc, w.o_heads, norm_, w.o_heads, spec_.rms_eps);
  ops::silu_mul(enc, w.z, w.o, w.o);
  ops::matmul(enc, w.o, w_out_, c.proj);
  ops::add(enc, c.x, c.proj, c.x);
}

void Gdn::encode(Encoder& enc, const Chunk& c, Workspace& workspace, LayerState* state) const {
  const GdnWorkspace& w = static_cast<const GdnWorkspace&>(workspace);
  const GdnState::ChunkIo io = static_cast<GdnState&>(*state).chunk(c.slot0, c.t, w.shared);
  project(enc, c, io.rows, w.z);
  recur(enc, io, w.o);
  finish(enc, c, w);
}

void Gdn::encode_segments(Encoder& enc, const Chunk& c, Workspace& workspace,
                          const std::vector<LayerState*>& states) const {
  if (states.size() == 1) return encode(enc, c, workspace, states[0]);
  const GdnWorkspace& w = static_cast<const GdnWorkspace&>(workspace);
  const GdnRows& all = w.shared;
  project(enc, c, all, w.z);
  for (size_t i = 0; i < c.segments.size(); ++i) {
    const Segment& g = c.segments[i];
    const GdnRows mine{rows(all.u, g.row0, g.t), rows(all.qkv, g.row0, g.t), rows(all.a, g.row0, g.t),
                       rows(all.b, g.row0, g.t)};
    const GdnState::ChunkIo io = static_cast<GdnState&>(*states[i]).chunk(g.slot0, g.t, mine);
    if (io.rows.u.data<float>() != mine.u.data<float>()) {  // the state keeps its rows for a commit's replay
      ops::copy_cols(enc, mine.u, 0, io.rows.u, 0, int(w.channels));
      ops::copy_cols(enc, mine.a, 0, io.rows.a, 0, int(w.heads));
      ops::copy_cols(enc, mine.b, 0, io.rows.b, 0, int(w.heads));
    }
    recur(enc, io, rows(w.o, g.row0, g.t));
  }
  finish(enc, c, w);
}

std::unique_ptr<Layer> build_gdn(const LayerInit& init) { return std::make_unique<Gdn>(init); }

}  // namespace eyas::model
