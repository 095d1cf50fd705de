#include "model/layers/moe_ffn.h"

#include "model/views.h"
#include "model/weights.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/model_misc.h"
#include "ops/moe.h"
#include "ops/norm.h"

namespace eyas::model {

namespace {

struct MoeFfnWorkspace : Workspace {
  int64_t experts, shared, hidden;  // E, Is (0 = no shared expert), H
  int rows = 0;
  Tensor router_buf, sh_gate_buf, sh_up_buf, sh_out_buf, sh_g_buf;  // [rows, E | Is | Is | H | 1]
  Tensor router, sh_gate, sh_up, sh_out, sh_g;                      // one chunk's rows

  MoeFfnWorkspace(int64_t E, int64_t Is, int64_t H) : experts(E), shared(Is), hidden(H) {}

  void reserve(int n) override {
    if (n <= rows) return;
    auto f32 = [&](int64_t cols) { return Tensor::empty(DType::F32, {n, cols}); };
    rows = n;
    router_buf = f32(experts);
    if (shared > 0) sh_gate_buf = f32(shared), sh_up_buf = f32(shared), sh_out_buf = f32(hidden), sh_g_buf = f32(1);
  }

  void bind(Encoder&, int t) override {
    router = model::rows(router_buf, 0, t);
    if (shared > 0) {
      sh_gate = model::rows(sh_gate_buf, 0, t), sh_up = model::rows(sh_up_buf, 0, t);
      sh_out = model::rows(sh_out_buf, 0, t), sh_g = model::rows(sh_g_buf, 0, t);
    }
  }
};

class MoeFfn : public Layer {
 public:
  explicit MoeFfn(const LayerInit& init);
  std::unique_ptr<Workspace> make_workspace() const override;
  void encode(Encoder& enc, const Chunk& c, Workspace& ws, LayerState* state) const override;

 private:
  float eps_;
  MoeSpec moe_;
  int64_t hidden_;
  Tensor ffn_norm_, router_, gate_exps_, up_exps_, down_exps_;
  Tensor gate_shexp_, up_shexp_, down_shexp_, gate_inp_shexp_;  // shared expert (optional)
};

}  // namespace

MoeFfn::MoeFfn(const LayerInit& init) : eps_(init.spec.rms_eps), moe_(init.spec.moe), hidden_(init.spec.hidden_size) {
  const WeightMap& w = init.weights;
  const std::string p = "blk." + std::to_string(init.block) + ".";
  if (!init.spec.has_moe)
    fail("Transformer", "layer " + std::to_string(init.block) + " is moe_ffn but the spec has no 'moe' section");
  const int64_t H = hidden_, E = moe_.num_experts, Ie = moe_.expert_intermediate_size,
                Is = moe_.shared_expert_intermediate_size;
  ffn_norm_ = take(w, p + "ffn_norm", {H}, true);
  router_ = take(w, p + "ffn_gate_inp", {E, H}, false);
  gate_exps_ = take(w, p + "ffn_gate_exps", {E, Ie, H}, false);
  up_exps_ = take(w, p + "ffn_up_exps", {E, Ie, H}, false);
  down_exps_ = take(w, p + "ffn_down_exps", {E, H, Ie}, false);
  if (Is > 0) {
    gate_shexp_ = take(w, p + "ffn_gate_shexp", {Is, H}, false);
    up_shexp_ = take(w, p + "ffn_up_shexp", {Is, H}, false);
    down_shexp_ = take(w, p + "ffn_down_shexp", {H, Is}, false);
    if (moe_.shared_expert_gate) gate_inp_shexp_ = take(w, p + "ffn_gate_inp_shexp", {1, H}, false);
  }
}

std::unique_ptr<Workspace> MoeFfn::make_workspace() const {
  return std::make_unique<MoeFfnWorkspace>(moe_.num_experts, moe_.shared_expert_intermediate_size, hidden_);
}

void MoeFfn::encode(Encoder& enc, const Chunk& c, Workspace& workspace, LayerState*) const {
  const MoeFfnWorkspace& w = static_cast<const MoeFfnWorkspace&>(workspace);
  const Tensor &xn = c.xn, &proj = c.proj;
  ops::rms_norm(enc, c.x, ffn_norm_, xn, eps_);
  ops::matmul(enc, xn, router_, w.router);
  ops::moe_ffn(enc, xn, w.router, gate_exps_, up_exps_, down_exps_, moe_.top_k, moe_.norm_topk_prob, proj);
  if (gate_shexp_.defined()) {
    const Tensor &g = w.sh_gate, &u = w.sh_up, &y = w.sh_out;
    ops::matmul(enc, xn, gate_shexp_, g);
    ops::matmul(enc, xn, up_shexp_, u);
    ops::silu_mul(enc, g, u, g);
    ops::matmul(enc, g, down_shexp_, y);
    if (gate_inp_shexp_.defined()) {
      ops::matmul(enc, xn, gate_inp_shexp_, w.sh_g);
      ops::sigmoid_scale_rows(enc, y, w.sh_g, y);
    }
    ops::add(enc, proj, y, proj);
  }
  ops::add(enc, c.x, proj, c.x);
}

std::unique_ptr<Layer> build_moe_ffn(const LayerInit& init) { return std::make_unique<MoeFfn>(init); }

}  // namespace eyas::model
