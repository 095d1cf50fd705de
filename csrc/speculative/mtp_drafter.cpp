#include "speculative/mtp_drafter.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "model/layers/registry.h"
#include "model/views.h"
#include "model/weights.h"
#include "ops/embedding.h"
#include "ops/matmul.h"
#include "ops/model_misc.h"
#include "ops/norm.h"
#include "speculative/expand_levels.h"

namespace eyas::speculative {

namespace {

const char* kOp = "MtpDrafter";
constexpr int kChunk = 128;       // rows per ingest forward
constexpr int kTreeSlots = 1024;  // scratch KV slots after the committed pairs (>= top_k * depth)

}  // namespace

MtpDrafter::MtpDrafter(model::ModelSpec spec, model::WeightMap w, int block, const std::string& ffn_kind,
                       int max_context, std::shared_ptr<Device> device)
    : RuntimeDrafter(kOp, max_context, std::move(device)), spec_(std::move(spec)) {
  model::validate_spec(spec_);
  if (block < 0) fail(kOp, "block must be >= 0");
  const int64_t H = spec_.hidden_size, V = spec_.vocab_size;
  const std::string p = "blk." + std::to_string(block) + ".";
  // The block's own vocabulary tensors when a file carries them, else the target's (Qwen3.5 shares them).
  embd_ = model::take(w, p + "nextn.embed_tokens", {V, H}, false, false);
  if (!embd_.defined()) embd_ = model::take(w, "token_embd", {V, H}, false);
  lm_head_ = model::take(w, p + "nextn.shared_head_head", {V, H}, false, false);
  if (!lm_head_.defined()) lm_head_ = spec_.tie_embeddings ? embd_ : model::take(w, "output", {V, H}, false);
  target_norm_ = model::take(w, "output_norm", {H}, true);
  enorm_ = model::take(w, p + "nextn.enorm", {H}, true);
  hnorm_ = model::take(w, p + "nextn.hnorm", {H}, true);
  eh_proj_ = model::take(w, p + "nextn.eh_proj", {H, 2 * H}, false);
  head_norm_ = model::take(w, p + "nextn.shared_head_norm", {H}, true);
  const model::LayerKind& mixer = model::find_layer_kind("attention");
  const model::LayerKind& ffn = model::find_layer_kind(ffn_kind);
  if (ffn.role != model::Role::Ffn) fail(kOp, "'" + ffn_kind + "' is not an FFN kind");
  mixer_ = mixer.build(model::LayerInit{spec_, block, w, true});
  ffn_ = ffn.build(model::LayerInit{spec_, block, w, true});
  mixer_ws_ = mixer_->make_workspace();
  ffn_ws_ = ffn_->make_workspace();
  mixer_->join(*mixer_ws_);
  ffn_->join(*ffn_ws_);
  kv_ = mixer_->make_state(model::StateInit{max_context_ + kTreeSlots, DType::F32});
}

void MtpDrafter::ensure_scratch(int rows, int logit_rows) {
  const int64_t H = spec_.hidden_size;
  if (rows > s_.rows) {
    auto f = [&](int64_t n) { return Tensor::empty(DType::F32, {rows, n}); };
    s_.ids = Tensor::empty(DType::I32, {rows});
    s_.pos = Tensor::empty(DType::I32, {rows});
    s_.e = f(H), s_.en = f(H), s_.h = f(H), s_.hn = f(H), s_.u = f(2 * H);
    s_.x = f(H), s_.xn = f(H), s_.proj = f(H), s_.o = f(H);
    mixer_ws_->reserve(rows);
    ffn_ws_->reserve(rows);
    s_.rows = rows;
  }
  if (logit_rows > s_.logit_rows) {  // few rows: a row is the whole vocabulary
    s_.logits = Tensor::empty(DType::F32, {logit_rows, int64_t(spec_.vocab_size)});
    s_.logit_rows = logit_rows;
  }
}

void MtpDrafter::encode_forward(Encoder& enc, int T, bool target_h, int prefix, int slot0, const Tensor& mask,
                                int logit_row0) {
  const int64_t H = spec_.hidden_size;
  const float eps = spec_.rms_eps;
  Tensor ids = model::head(s_.ids, T), e = model::rows(s_.e, 0, T), en = model::rows(s_.en, 0, T);
  Tensor h = model::rows(s_.h, 0, T), hn = model::rows(s_.hn, 0, T), u = model::rows(s_.u, 0, T);
  Tensor o = model::rows(s_.o, 0, T);
  model::Chunk c;
  c.t = T, c.slot0 = slot0, c.prefix = prefix, c.mask = mask, c.pos = model::head(s_.pos, T);
  c.x = model::rows(s_.x, 0, T), c.xn = model::rows(s_.xn, 0, T), c.proj = model::rows(s_.proj, 0, T);
  mixer_ws_->bind(enc, T);
  ffn_ws_->bind(enc, T);
  ops::embedding(enc, embd_, ids, e);
  ops::rms_norm(enc, e, enorm_, en, eps);
  if (target_h) ops::rms_norm(enc, h, target_norm_, h, eps);  // the target's normed final state
  ops::rms_norm(enc, h, hnorm_, hn, eps);
  ops::copy_cols(enc, en, 0, u, 0, int(H));  // embedding first, hidden second
  ops::copy_cols(enc, hn, 0, u, int(H), int(H));
  ops::matmul(enc, u, eh_proj_, c.x);
  mixer_->encode(enc, c, *mixer_ws_, kv_.get());
  ffn_->encode(enc, c, *ffn_ws_, nullptr);
  ops::rms_norm(enc, c.x, head_norm_, o, eps);
  const int L = T - logit_row0;
  if (L > 0) ops::matmul(enc, model::rows(s_.o, logit_row0, L), lm_head_, model::rows(s_.logits, 0, L));
}

void MtpDrafter::ingest(const Tensor& hidden, const Tensor& tokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int T = check_pairs(hidden, "hidden", spec_.hidden_size, tokens, spec_.vocab_size);
  const int64_t H = spec_.hidden_size;
  ensure_scratch(std::min(T, kChunk), 1);
  const int C = run_chunks(tokens.data<int32_t>(), T, kChunk, s_.ids, s_.pos, [&](Encoder& enc, int c0, int C) {
    std::memcpy(s_.h.data<float>(), hidden.data<float>() + c0 * H, size_t(C * H) * sizeof(float));
    encode_forward(enc, C, true, length_, length_, Tensor{}, C - 1);  // causal: each row sees the rows before it
  });
  set_root(s_.o.data<float>() + (C - 1) * H, H, s_.logits.data<float>(), spec_.vocab_size,
           tokens.data<int32_t>()[T - 1]);
}

DraftTree MtpDrafter::expand(const TreePolicy& policy) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_tree(policy, policy.depth, kTreeSlots);
  TreeBuilder b(policy, {}, spec_.vocab_size);
  ensure_scratch(policy.top_k, policy.top_k);
  return grow_tree(b, spec_.hidden_size, s_.ids, s_.pos, s_.h, s_.o, s_.logits,
                   [&](Encoder& enc, int F, const Tensor& mask, int slot0) {
                     encode_forward(enc, F, false, length_, slot0, mask, 0);
                   });
}

}  // namespace eyas::speculative
