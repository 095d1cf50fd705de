#include "model/layers/dense_ffn.h"

#include "model/views.h"
#include "model/weights.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/norm.h"

namespace eyas::model {

namespace {

struct DenseFfnWorkspace : Workspace {
  int64_t inter;
  bool fused = false;
  int rows = 0;
  Tensor g_buf, u_buf, gu_buf;  // F32[rows, I], F32[rows, I], F32[rows, 2I]
  Tensor g, u, gu;              // one chunk's rows

  explicit DenseFfnWorkspace(int64_t I) : inter(I) {}

  void reserve(int n) override {
    if (n <= rows) return;
    rows = n;
    g_buf = Tensor::empty(DType::F32, {n, inter}), u_buf = Tensor::empty(DType::F32, {n, inter});
    if (fused) gu_buf = Tensor::empty(DType::F32, {n, 2 * inter});
  }

  void bind(Encoder&, int t) override {
    g = model::rows(g_buf, 0, t), u = model::rows(u_buf, 0, t);
    if (gu_buf.defined()) gu = model::rows(gu_buf, 0, t);
  }
};

class DenseFfn : public Layer {
 public:
  explicit DenseFfn(const LayerInit& init);
  std::unique_ptr<Workspace> make_workspace() const override;
  void join(Workspace& ws) const override;
  void encode(Encoder& enc, const Chunk& c, Workspace& ws, LayerState* state) const override;

 private:
  float eps_;
  int64_t inter_;  // I
  Tensor ffn_norm_, gate_, up_, down_;
  Tensor wgu_;  // fused gate|up (optional)
};

}  // namespace

DenseFfn::DenseFfn(const LayerInit& init) : eps_(init.spec.rms_eps), inter_(init.spec.intermediate_size) {
  const WeightMap& w = init.weights;
  const std::string p = "blk." + std::to_string(init.block) + ".";
  const int64_t H = init.spec.hidden_size, I = inter_;
  if (I <= 0) fail("Transformer", "layer " + std::to_string(init.block) + " is dense but intermediate_size is 0");
  ffn_norm_ = take(w, p + "ffn_norm", {H}, true);
  gate_ = take(w, p + "ffn_gate", {I, H}, false);
  up_ = take(w, p + "ffn_up", {I, H}, false);
  down_ = take(w, p + "ffn_down", {H, I}, false);
  if (init.fuse && gate_.dtype == up_.dtype) wgu_ = concat_rows({&gate_, &up_});
}

std::unique_ptr<Workspace> DenseFfn::make_workspace() const { return std::make_unique<DenseFfnWorkspace>(inter_); }

void DenseFfn::join(Workspace& ws) const { static_cast<DenseFfnWorkspace&>(ws).fused |= wgu_.defined(); }

void DenseFfn::encode(Encoder& enc, const Chunk& c, Workspace& workspace, LayerState*) const {
  const DenseFfnWorkspace& w = static_cast<const DenseFfnWorkspace&>(workspace);
  ops::rms_norm(enc, c.x, ffn_norm_, c.xn, eps_);
  if (wgu_.defined()) {
    ops::matmul(enc, c.xn, wgu_, w.gu);
    ops::silu_mul_halves(enc, w.gu, w.g);  // the halves read where they lie, not copied apart
  } else {
    ops::matmul(enc, c.xn, gate_, w.g);
    ops::matmul(enc, c.xn, up_, w.u);
    ops::silu_mul(enc, w.g, w.u, w.g);
  }
  ops::matmul(enc, w.g, down_, c.proj);
  ops::add(enc, c.x, c.proj, c.x);
}

std::unique_ptr<Layer> build_dense_ffn(const LayerInit& init) { return std::make_unique<DenseFfn>(init); }

}  // namespace eyas::model
