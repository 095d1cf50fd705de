#include "speculative/hydra_drafter.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "model/layers/registry.h"
#include "model/views.h"
#include "model/weights.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/matmul.h"
#include "ops/model_misc.h"
#include "ops/norm.h"

namespace eyas::speculative {

namespace {

const char* kOp = "HydraDrafter";
constexpr int kChunk = 128;  // rows per ingest forward

}  // namespace

HydraDrafter::HydraDrafter(model::ModelSpec spec, model::WeightMap w, std::vector<int32_t> d2t, int num_heads,
                           int head_layers, int max_context, std::shared_ptr<Device> device)
    : RuntimeDrafter(kOp, max_context, std::move(device)),
      spec_(std::move(spec)),
      N_(num_heads),
      R_(head_layers),
      d2t_(std::move(d2t)) {
  model::validate_spec(spec_);
  if (N_ < 1 || N_ > 64) fail(kOp, "num_heads must be in [1, 64] (a tree's depth limit), got " + std::to_string(N_));
  if (R_ < 1) fail(kOp, "head_layers must be >= 1, got " + std::to_string(R_));
  for (const model::BlockSpec& b : spec_.layers)
    if (b.mixer != "attention" || b.ffn != "dense_ffn")
      fail(kOp, "the prefix block is attention + dense_ffn, the spec says " + b.mixer + " + " + b.ffn);
  const int64_t H = spec_.hidden_size, V = spec_.vocab_size;
  W_ = int64_t(N_ + 1) * H;
  vd_ = d2t_.empty() ? int(V) : int(d2t_.size());
  for (int32_t id : d2t_)
    if (id < 0 || id >= V) fail(kOp, "d2t maps a draft token outside the target vocabulary");
  auto lm = w.find("hydra.lm_head");
  if (d2t_.empty() && lm != w.end() && !lm->second.shape.empty() && lm->second.dim(0) != V)
    fail(kOp, "hydra.lm_head has " + std::to_string(lm->second.dim(0)) +
                  " rows: a draft vocabulary other than the target's needs d2t");
  embd_ = model::take(w, "token_embd", {V, H}, false);
  target_norm_ = model::take(w, "output_norm", {H}, true);
  prefix_norm_ = model::take(w, "hydra.prefix_norm", {H}, true);
  norm_ = model::take(w, "hydra.norm", {H}, true);
  lm_head_ = model::take(w, "hydra.lm_head", {vd_, H}, false);
  for (int i = 0; i < N_; ++i) {
    const std::string p = "hydra.head." + std::to_string(i) + ".";
    Head h;
    h.in = model::take(w, p + "in", {H, (i + 2) * H}, false);
    for (int l = 1; l < R_; ++l) h.res.push_back(model::take(w, p + "res." + std::to_string(l), {H, H}, false));
    // A residual block past R would silently be dropped: the weights were trained with more layers.
    if (w.count(p + "res." + std::to_string(R_)))
      fail(kOp, "weights have " + p + "res." + std::to_string(R_) + " but head_layers is " + std::to_string(R_));
    heads_.push_back(std::move(h));
  }
  const model::LayerKind& mixer = model::find_layer_kind("attention");
  const model::LayerKind& ffn = model::find_layer_kind("dense_ffn");
  mixer_ = mixer.build(model::LayerInit{spec_, 0, w, true});
  ffn_ = ffn.build(model::LayerInit{spec_, 0, w, true});
  mixer_ws_ = mixer_->make_workspace();
  ffn_ws_ = ffn_->make_workspace();
  mixer_->join(*mixer_ws_);
  ffn_->join(*ffn_ws_);
  kv_ = mixer_->make_state(model::StateInit{max_context_, DType::F32});  // committed pairs only: no tree slots
  s_.root_id = Tensor::empty(DType::I32, {1});
  s_.c = Tensor::empty(DType::F32, {1, H});
}

void HydraDrafter::ensure_scratch(int block_rows, int head_rows) {
  const int64_t H = spec_.hidden_size;
  auto f = [](int64_t r, int64_t n) { return Tensor::empty(DType::F32, {r, n}); };
  if (block_rows > s_.block_rows) {
    s_.x = f(block_rows, H), s_.xn = f(block_rows, H), s_.proj = f(block_rows, H);
    mixer_ws_->reserve(block_rows);
    ffn_ws_->reserve(block_rows);
    s_.block_rows = block_rows;
  }
  if (head_rows > s_.head_rows) {
    s_.e = f(head_rows, H), s_.in = f(head_rows, W_), s_.out = f(head_rows, W_);
    s_.u = Tensor::empty(DType::F32, {head_rows * W_});
    s_.z = f(head_rows, H), s_.g = f(head_rows, H), s_.zn = f(head_rows, H), s_.ones = f(head_rows, H);
    std::fill_n(s_.ones.data<float>(), head_rows * H, 1.0f);  // silu(g) = silu_mul(g, 1), exactly
    s_.logits = f(head_rows, vd_);
    s_.head_rows = head_rows;
  }
  // Ingest chunks and tree frontiers both pass their tokens and positions through ids and pos.
  const int id_rows = std::max(s_.block_rows, s_.head_rows);
  if (!s_.ids.defined() || s_.ids.dim(0) < id_rows) {
    s_.ids = Tensor::empty(DType::I32, {id_rows});
    s_.pos = Tensor::empty(DType::I32, {id_rows});
  }
}

void HydraDrafter::encode_head(Encoder& enc, int i, int F, const Tensor& u) {
  const Head& h = heads_[size_t(i)];
  Tensor z = model::rows(s_.z, 0, F), g = model::rows(s_.g, 0, F), zn = model::rows(s_.zn, 0, F);
  Tensor ones = model::rows(s_.ones, 0, F);
  ops::copy_cols(enc, u, 0, z, 0, int(spec_.hidden_size));  // the residual path starts at c
  ops::matmul(enc, u, h.in, g);
  ops::silu_mul(enc, g, ones, g);
  ops::add(enc, z, g, z);
  for (const Tensor& r : h.res) {
    ops::matmul(enc, z, r, g);
    ops::silu_mul(enc, g, ones, g);
    ops::add(enc, z, g, z);
  }
  ops::rms_norm(enc, z, norm_, zn, spec_.rms_eps);
  ops::matmul(enc, zn, lm_head_, model::rows(s_.logits, 0, F));
}

void HydraDrafter::ingest(const Tensor& hidden, const Tensor& tokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int T = check_pairs(hidden, "hidden", spec_.hidden_size, tokens, spec_.vocab_size);
  const int64_t H = spec_.hidden_size;
  const float eps = spec_.rms_eps;
  const int32_t* tk = tokens.data<int32_t>();
  ensure_scratch(std::min(T, kChunk), 1);
  s_.root_id.data<int32_t>()[0] = tk[T - 1];
  Tensor u0 = model::reshape(s_.u, {1, 2 * H});  // [c | E(root)]: head 0's input
  run_chunks(tk, T, kChunk, s_.ids, s_.pos, [&](Encoder& enc, int c0, int C) {
    model::Chunk c;
    c.t = C, c.slot0 = length_, c.prefix = length_, c.pos = model::head(s_.pos, C);  // causal over the pairs
    c.x = model::rows(s_.x, 0, C), c.xn = model::rows(s_.xn, 0, C), c.proj = model::rows(s_.proj, 0, C);
    mixer_ws_->bind(enc, C);
    ffn_ws_->bind(enc, C);
    ops::rms_norm(enc, model::rows(hidden, c0, C), target_norm_, c.x, eps);  // the target's normed final state
    mixer_->encode(enc, c, *mixer_ws_, kv_.get());
    ffn_->encode(enc, c, *ffn_ws_, nullptr);
    if (c0 + C < T) return;  // only the last pair's c feeds the heads
    Tensor e = model::rows(s_.e, 0, 1);
    ops::rms_norm(enc, model::rows(c.x, C - 1, 1), prefix_norm_, s_.c, eps);
    ops::embedding(enc, embd_, s_.root_id, e);
    ops::copy_cols(enc, s_.c, 0, u0, 0, int(H));
    ops::copy_cols(enc, e, 0, u0, int(H), int(H));
    encode_head(enc, 0, 1, u0);
  });
  std::vector<float> row(size_t(W_), 0.0f);
  std::memcpy(row.data(), u0.data<float>(), size_t(2 * H) * sizeof(float));
  set_root(row.data(), W_, s_.logits.data<float>(), vd_, tk[T - 1]);
}

DraftTree HydraDrafter::expand(const TreePolicy& policy) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (policy.depth > N_)
    fail(kOp, "tree depth " + std::to_string(policy.depth) + " exceeds the drafter's " + std::to_string(N_) + " heads");
  check_tree(policy, 0, 0);  // only the root's presence: tree nodes take no KV slots
  TreeBuilder b(policy, d2t_, vd_);
  ensure_scratch(0, policy.top_k);
  const int64_t H = spec_.hidden_size;
  // Level l's frontier holds depth-l nodes; each copies its parent's row, adds E(its token) as block l+1,
  // and head l runs on the first l+2 blocks (matmul needs them as contiguous rows).
  return grow_tree(b, W_, s_.ids, s_.pos, s_.in, s_.out, s_.logits, [&](Encoder& enc, int F, const Tensor&, int) {
    const int l = b.level();
    Tensor in = model::rows(s_.in, 0, F), out = model::rows(s_.out, 0, F), e = model::rows(s_.e, 0, F);
    Tensor u = model::reshape(s_.u, {F, (l + 2) * H});
    ops::copy_cols(enc, in, 0, out, 0, int(W_));
    ops::embedding(enc, embd_, model::head(s_.ids, F), e);
    ops::copy_cols(enc, e, 0, out, int((l + 1) * H), int(H));
    ops::copy_cols(enc, out, 0, u, 0, int((l + 2) * H));
    encode_head(enc, l, F, u);
  });
}

}  // namespace eyas::speculative
