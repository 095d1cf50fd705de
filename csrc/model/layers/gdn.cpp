#include "model/layers/gdn.h"

#include "model/layers/gdn_state.h"
#include "model/views.h"
#include "model/weights.h"
#include "ops/elementwise.h"
#include "ops/gdn.h"
#include "ops/matmul.h"
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

 private:
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

void Gdn::encode(Encoder& enc, const Chunk& c, Workspace& workspace, LayerState* state) const {
  const GdnWorkspace& w = static_cast<const GdnWorkspace&>(workspace);
  const GdnState::ChunkIo io = static_cast<GdnState&>(*state).chunk(c.slot0, c.t, w.shared);
  const GdnRows& r = io.rows;
  ops::rms_norm(enc, c.x, attn_norm_, c.xn, spec_.rms_eps);
  ops::matmul(enc, c.xn, w_qkv_, r.u);
  ops::matmul(enc, c.xn, w_z_, w.z);
  ops::matmul(enc, c.xn, w_b_, r.b);
  ops::matmul(enc, c.xn, w_a_, r.a);
  ops::gdn_conv(enc, r.u, io.parents, io.conv_in, conv_w_, r.qkv);
  ops::gdn_core(enc, d_, r.qkv, r.a, r.b, A_, dt_bias_, Tensor{}, io.parents, io.state_in, io.state_out, w.o);
  // After the conv has read conv_in (which may be the working window itself).
  if (io.conv_out.defined()) ops::gdn_conv_state(enc, io.conv_in, r.u, Tensor{}, io.conv_out);
  // Per head: RMSNorm(o) * w * silu(z).
  ops::rms_norm(enc, w.o_heads, norm_, w.o_heads, spec_.rms_eps);
  ops::silu_mul(enc, w.z, w.o, w.o);
  ops::matmul(enc, w.o, w_out_, c.proj);
  ops::add(enc, c.x, c.proj, c.x);
}

std::unique_ptr<Layer> build_gdn(const LayerInit& init) { return std::make_unique<Gdn>(init); }

}  // namespace eyas::model
