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
    : spec_(std::move(spec)), device_(std::move(device)), max_context_(max_context) {
  model::validate_spec(spec_);
  if (!device_) fail(kOp, "no device");
  if (max_context < 1 || max_context > (1 << 24)) fail(kOp, "max_context must be in [1, 2^24]");
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
  check_dtype(kOp, "hidden", hidden, DType::F32);
  check_ndim(kOp, "hidden", hidden, 2);
  check_dim(kOp, "hidden", hidden, 1, spec_.hidden_size);
  check_dtype(kOp, "tokens", tokens, DType::I32);
  check_ndim(kOp, "tokens", tokens, 1);
  check_dim(kOp, "tokens", tokens, 0, hidden.dim(0));
  const int T = int(hidden.dim(0));
  if (T < 1) fail(kOp, "ingest needs at least one (hidden, token) pair");
  if (int64_t(length_) + T > max_context_)
    fail(kOp, "ingest of " + std::to_string(T) + " pairs at length " + std::to_string(length_) +
                  " exceeds max_context " + std::to_string(max_context_));
  const int32_t* tk = tokens.data<int32_t>();
  for (int i = 0; i < T; ++i)
    if (tk[i] < 0 || tk[i] >= spec_.vocab_size) fail(kOp, "token id " + std::to_string(tk[i]) + " outside the vocabulary");
  const int64_t H = spec_.hidden_size;
  ensure_scratch(std::min(T, kChunk), 1);
  int C = 0;
  for (int c0 = 0; c0 < T; c0 += kChunk) {
    C = std::min(kChunk, T - c0);
    std::memcpy(s_.ids.data<int32_t>(), tk + c0, size_t(C) * sizeof(int32_t));
    std::memcpy(s_.h.data<float>(), hidden.data<float>() + c0 * H, size_t(C * H) * sizeof(float));
    for (int i = 0; i < C; ++i) s_.pos.data<int32_t>()[i] = length_ + i;  // pair position = hidden's position
    Encoder enc(*device_);
    encode_forward(enc, C, true, length_, length_, Tensor{}, C - 1);  // causal: each row sees the rows before it
    enc.commit();
    length_ += C;
  }
  root_h_.assign(s_.o.data<float>() + (C - 1) * H, s_.o.data<float>() + C * H);
  root_logits_.assign(s_.logits.data<float>(), s_.logits.data<float>() + spec_.vocab_size);
  root_token_ = tk[T - 1];
}

DraftTree MtpDrafter::expand(const TreePolicy& policy) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (root_token_ < 0) fail(kOp, "expand needs a preceding ingest");
  TreeBuilder b(policy, {}, spec_.vocab_size);
  if (int64_t(policy.top_k) * policy.depth > kTreeSlots)
    fail(kOp, "top_k * depth exceeds the drafter's " + std::to_string(kTreeSlots) + " tree slots");
  b.start(root_token_, root_logits_.data());
  const int64_t H = spec_.hidden_size;
  ensure_scratch(policy.top_k, policy.top_k);
  const int F0 = int(b.frontier_tokens().size());
  for (int j = 0; j < F0; ++j) std::memcpy(s_.h.data<float>() + j * H, root_h_.data(), size_t(H) * sizeof(float));
  return expand_levels(b, length_, H, s_.ids, s_.pos, s_.h, s_.o, s_.logits, [&](int F, const Tensor& mask) {
    Encoder enc(*device_);
    encode_forward(enc, F, false, length_, length_ + b.slots_run(), mask, 0);
    enc.commit();
  });
}

void MtpDrafter::truncate(int n) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (n < 0 || n > length_) fail(kOp, "truncate(" + std::to_string(n) + ") outside [0, " + std::to_string(length_) + "]");
  length_ = n;
  root_token_ = -1;  // the root's state belongs to the dropped suffix
}

}  // namespace eyas::speculative
