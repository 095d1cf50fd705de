#include "speculative/drafter.h"

#include <cmath>
#include <cstring>
#include <string>

#include "model/views.h"
#include "model/weights.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/host_rows.h"
#include "ops/kv.h"
#include "ops/matmul.h"
#include "ops/model_misc.h"
#include "ops/norm.h"
#include "ops/rope.h"
#include "speculative/expand_levels.h"

namespace eyas::speculative {

namespace {

const char* kOp = "Eagle3Drafter";
constexpr int kChunk = 128;     // rows per ingest forward
constexpr int kTreeSlots = 4096;  // scratch KV slots after the committed prefix (>= depth * top_k)

// First `rows` rows of a contiguous tensor, reshaped to `shape` (rows folded into shape[0]).
Tensor rows_view(const Tensor& t, int64_t row0, std::vector<int64_t> shape) {
  Tensor v = t;
  const int64_t per_row = t.numel() / t.dim(0);
  v.offset = t.offset + size_t(row0 * per_row) * type_traits(t.dtype).block_bytes / type_traits(t.dtype).block_elems;
  v.shape = std::move(shape);
  return v;
}

Tensor take(std::map<std::string, Tensor>& w, const std::string& name, std::vector<int64_t> shape, bool optional = false) {
  auto it = w.find(name);
  if (it == w.end()) {
    if (optional) return Tensor{};
    fail(kOp, "weight '" + name + "' is missing");
  }
  Tensor t = it->second;
  if (t.shape != shape) {
    Tensor want;
    want.dtype = t.dtype;
    want.shape = shape;
    fail(kOp, "weight '" + name + "' is " + t.describe() + ", expected " + want.describe());
  }
  return t;
}

}  // namespace

Eagle3Drafter::Eagle3Drafter(DrafterSpec s, std::map<std::string, Tensor> w, std::vector<int32_t> d2t,
                             int max_context, std::shared_ptr<Device> device)
    : RuntimeDrafter(kOp, max_context, std::move(device)), spec_(std::move(s)), d2t_(std::move(d2t)) {
  const int H = spec_.hidden_size, Ht = spec_.target_hidden_size, I = spec_.intermediate_size;
  const int Q = spec_.num_heads * spec_.head_dim, KV = spec_.num_kv_heads * spec_.head_dim;
  for (int v : {H, Ht, I, spec_.num_heads, spec_.num_kv_heads, spec_.head_dim, spec_.vocab_size,
                spec_.draft_vocab_size, spec_.num_aux})
    if (v <= 0) fail(kOp, "spec: sizes must be positive");
  if (spec_.num_heads % spec_.num_kv_heads) fail(kOp, "spec: num_heads must be a multiple of num_kv_heads");
  if (spec_.rot_dim <= 0 || spec_.rot_dim > spec_.head_dim || spec_.rot_dim % 2)
    fail(kOp, "spec: rot_dim must be even and in (0, head_dim]");
  if (int(spec_.rope_inv_freq.size()) != spec_.rot_dim / 2) fail(kOp, "spec: rope_inv_freq must have rot_dim/2 entries");
  if (!d2t_.empty() && int(d2t_.size()) != spec_.draft_vocab_size)
    fail(kOp, "d2t has " + std::to_string(d2t_.size()) + " entries, draft vocab is " + std::to_string(spec_.draft_vocab_size));
  for (int32_t id : d2t_)
    if (id < 0 || id >= spec_.vocab_size) fail(kOp, "d2t maps a draft token outside the target vocabulary");
  if (d2t_.empty() && spec_.draft_vocab_size != spec_.vocab_size)
    fail(kOp, "a draft vocabulary smaller than the target's needs d2t");
  fc_ = take(w, "fc", {H, int64_t(spec_.num_aux) * Ht});
  fc_bias_ = take(w, "fc.bias", {H}, true);
  hidden_norm_ = take(w, "hidden_norm", {H});
  input_norm_ = take(w, "input_norm", {H});
  wq_ = take(w, "attn_q", {Q, 2 * H});
  wk_ = take(w, "attn_k", {KV, 2 * H});
  wv_ = take(w, "attn_v", {KV, 2 * H});
  wo_ = take(w, "attn_output", {H, Q});
  post_norm_ = take(w, "post_norm", {H});
  w_gate_ = take(w, "ffn_gate", {I, H});
  w_up_ = take(w, "ffn_up", {I, H});
  w_down_ = take(w, "ffn_down", {H, I});
  out_norm_ = take(w, "output_norm", {H});
  lm_head_ = take(w, "output", {spec_.draft_vocab_size, H});
  embd_ = take(w, "token_embd", {spec_.vocab_size, H});
  for (const Tensor* t : {&hidden_norm_, &input_norm_, &post_norm_, &out_norm_})
    check_dtype(kOp, "norm weight", *t, DType::F32);
  if (fc_bias_.defined()) check_dtype(kOp, "fc.bias", fc_bias_, DType::F32);
  for (const Tensor* t : {&fc_, &wq_, &wk_, &wv_, &wo_, &w_gate_, &w_up_, &w_down_, &lm_head_, &embd_})
    if (!ops::matmul_supports(t->dtype)) fail(kOp, "weight type " + t->describe() + " is not supported");
  if (spec_.rescore_rows < 0 || spec_.rescore_rows > spec_.draft_vocab_size)
    fail(kOp, "spec: rescore_rows must be in [0, draft_vocab_size]");
  if (spec_.rescore_rows > 0) {  // the loader's copy, shared by every runtime of the drafter, else our own
    lm_head_coarse_ = take(w, "output_coarse", {spec_.draft_vocab_size, H}, true);
    if (lm_head_coarse_.defined())
      check_dtype(kOp, "output_coarse", lm_head_coarse_, DType::Q4_0);
    else
      lm_head_coarse_ = ops::requantize_q4_0_host(kOp, lm_head_);
  }
  // q|k|v and gate|up each as one matmul: one dispatch and one pass over the activations instead of three
  // and two. A view when the parts lie back to back (the loader stores them so), else a copy.
  if (wq_.dtype == wk_.dtype && wq_.dtype == wv_.dtype) w_qkv_ = model::concat_rows({&wq_, &wk_, &wv_});
  if (w_gate_.dtype == w_up_.dtype) w_gate_up_ = model::concat_rows({&w_gate_, &w_up_});
  inv_freq_ = Tensor::empty(DType::F32, {int64_t(spec_.rope_inv_freq.size())});
  std::memcpy(inv_freq_.data<float>(), spec_.rope_inv_freq.data(), spec_.rope_inv_freq.size() * sizeof(float));
  cache_slots_ = max_context_ + kTreeSlots;
  k_cache_ = Tensor::empty(DType::F32, {spec_.num_kv_heads, cache_slots_, spec_.head_dim});
  v_cache_ = Tensor::empty(DType::F32, {spec_.num_kv_heads, cache_slots_, spec_.head_dim});
}

void Eagle3Drafter::rescore(int L, int logit_row0) {
  if (!lm_head_coarse_.defined()) return;
  const int64_t V = spec_.draft_vocab_size, H = spec_.hidden_size;
  const int m = spec_.rescore_rows;
  // The rows the head read (encode_forward): the normed rows from 0, or the pre-norm ones from logit_row0.
  const float* head_in = spec_.norm_output ? s_.hn.data<float>() : s_.h2.data<float>() + logit_row0 * H;
  std::vector<float> best(static_cast<size_t>(m)), w(static_cast<size_t>(H));
  std::vector<int32_t> idx(static_cast<size_t>(m));
  const size_t head_row_bytes = row_bytes(lm_head_.dtype, H);
  for (int r = 0; r < L; ++r) {
    float* logits = s_.logits.data<float>() + r * V;
    const float* x = head_in + r * H;
    ops::topk_row_host(logits, int(V), m, best.data(), idx.data());
    // The rows lie anywhere in the stored head, which the target's stream has evicted: ask for all of them
    // at once so their misses overlap, instead of one row's misses after another's.
    for (int j = 0; j < m; ++j) ops::prefetch_host(lm_head_.row_ptr(idx[size_t(j)]), head_row_bytes);
    for (int j = 0; j < m; ++j) {
      ops::dequantize_row_host(int32_t(lm_head_.dtype), lm_head_.row_ptr(idx[size_t(j)]), H, w.data());
      logits[idx[size_t(j)]] = ops::dot16_row_host(w.data(), x, H);
    }
  }
}

void Eagle3Drafter::ensure_scratch(int rows) {
  if (rows <= s_.rows) return;
  const int64_t R = rows, H = spec_.hidden_size, I = spec_.intermediate_size;
  const int64_t Q = spec_.num_heads * spec_.head_dim, KV = spec_.num_kv_heads * spec_.head_dim;
  auto f = [&](int64_t n) { return Tensor::empty(DType::F32, {R, n}); };
  s_.ids = Tensor::empty(DType::I32, {R});
  s_.pos = Tensor::empty(DType::I32, {R});
  s_.g = f(H), s_.e = f(H), s_.en = f(H), s_.gn = f(H), s_.u = f(2 * H), s_.qkv = f(Q + 2 * KV);
  s_.q = f(Q), s_.k = f(KV), s_.v = f(KV), s_.o = f(Q), s_.attn = f(H), s_.h1 = f(H), s_.n = f(H), s_.gu = f(2 * I);
  s_.gate = f(I), s_.up = f(I), s_.down = f(H), s_.h2 = f(H), s_.hn = f(H), s_.logits = f(spec_.draft_vocab_size);
  s_.rows = rows;
}

void Eagle3Drafter::encode_forward(Encoder& enc, int T, const Tensor* aux, int prefix, int slot0, const Tensor& mask,
                                   int logit_row0) {
  const int64_t H = spec_.hidden_size, I = spec_.intermediate_size, hd = spec_.head_dim;
  const int64_t nh = spec_.num_heads, nkv = spec_.num_kv_heads;
  auto r = [&](const Tensor& t, int64_t n) { return rows_view(t, 0, {T, n}); };
  Tensor ids = rows_view(s_.ids, 0, {T}), pos = rows_view(s_.pos, 0, {T});
  Tensor g = r(s_.g, H), e = r(s_.e, H), en = r(s_.en, H), gn = r(s_.gn, H), u = r(s_.u, 2 * H);
  Tensor q = r(s_.q, nh * hd), k = r(s_.k, nkv * hd), v = r(s_.v, nkv * hd), o = r(s_.o, nh * hd);
  Tensor attn = r(s_.attn, H), h1 = r(s_.h1, H), n = r(s_.n, H), gate = r(s_.gate, I), up = r(s_.up, I);
  Tensor down = r(s_.down, H), h2 = r(s_.h2, H);
  ops::embedding(enc, embd_, ids, e);
  if (aux) {  // fresh target features go through fc; the drafter's own outputs are already H wide (§9.5)
    ops::matmul(enc, *aux, fc_, g);
    if (fc_bias_.defined()) ops::add(enc, g, fc_bias_, g);
  }
  ops::rms_norm(enc, e, input_norm_, en, spec_.rms_eps);
  ops::rms_norm(enc, g, hidden_norm_, gn, spec_.rms_eps);
  ops::copy_cols(enc, en, 0, u, 0, int(H));  // embedding first, feature second (§3.3)
  ops::copy_cols(enc, gn, 0, u, int(H), int(H));
  if (w_qkv_.defined()) {
    Tensor qkv = r(s_.qkv, nh * hd + 2 * nkv * hd);
    ops::matmul(enc, u, w_qkv_, qkv);
    model::split_cols(enc, qkv, {&q, &k, &v});  // one row: views, no dispatch
  } else {
    ops::matmul(enc, u, wq_, q);
    ops::matmul(enc, u, wk_, k);
    ops::matmul(enc, u, wv_, v);
  }
  Tensor q3 = rows_view(q, 0, {T, nh, hd}), k3 = rows_view(k, 0, {T, nkv, hd}), v3 = rows_view(v, 0, {T, nkv, hd});
  Tensor o3 = rows_view(o, 0, {T, nh, hd});
  ops::rope(enc, q3, pos, inv_freq_, spec_.rot_dim, ops::RopeStyle::NeoX, q3);
  ops::rope(enc, k3, pos, inv_freq_, spec_.rot_dim, ops::RopeStyle::NeoX, k3);
  ops::kv_write(enc, k3, k_cache_, slot0);
  ops::kv_write(enc, v3, v_cache_, slot0);
  ops::attention(enc, q3, k_cache_, v_cache_, prefix, mask, 1.0f / std::sqrt(float(hd)), o3);
  ops::matmul(enc, o, wo_, attn);
  ops::add(enc, spec_.norm_before_residual ? gn : g, attn, h1);
  ops::rms_norm(enc, h1, post_norm_, n, spec_.rms_eps);
  if (w_gate_up_.defined()) {
    Tensor gu = r(s_.gu, 2 * I);
    ops::matmul(enc, n, w_gate_up_, gu);
    ops::silu_mul_halves(enc, gu, gate);  // the halves read where they lie
  } else {
    ops::matmul(enc, n, w_gate_, gate);
    ops::matmul(enc, n, w_up_, up);
    ops::silu_mul(enc, gate, up, gate);
  }
  ops::matmul(enc, gate, w_down_, down);
  ops::add(enc, h1, down, h2);  // pre-norm output: fed back as the next depth's feature (§3.7)
  const int L = T - logit_row0;
  if (L <= 0) return;
  Tensor h2l = rows_view(s_.h2, logit_row0, {L, H}), hnl = rows_view(s_.hn, 0, {L, H});
  Tensor logits = rows_view(s_.logits, 0, {L, spec_.draft_vocab_size});
  const Tensor& head = lm_head_coarse_.defined() ? lm_head_coarse_ : lm_head_;
  if (spec_.norm_output) {
    ops::rms_norm(enc, h2l, out_norm_, hnl, spec_.rms_eps);
    ops::matmul(enc, hnl, head, logits);
  } else {
    ops::matmul(enc, h2l, head, logits);
  }
}

void Eagle3Drafter::ingest(const Tensor& aux, const Tensor& tokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int T = check_pairs(aux, "aux", int64_t(spec_.num_aux) * spec_.target_hidden_size, tokens, spec_.vocab_size);
  const int32_t* tk = tokens.data<int32_t>();
  ensure_scratch(std::min(T, kChunk));
  const int C = run_chunks(tk, T, kChunk, s_.ids, s_.pos, [&](Encoder& enc, int c0, int C) {
    Tensor a = rows_view(aux, c0, {C, aux.dim(1)});
    encode_forward(enc, C, &a, length_, length_, Tensor{}, c0 + C == T ? C - 1 : C);  // logits: the last row only
  });
  const int64_t H = spec_.hidden_size;
  rescore(1, C - 1);
  set_root(s_.h2.data<float>() + (C - 1) * H, H, s_.logits.data<float>(), spec_.draft_vocab_size, tk[T - 1]);
}

DraftTree Eagle3Drafter::expand(const TreePolicy& policy) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_tree(policy, policy.depth - 1, kTreeSlots);  // the last level's rows are never run
  TreeBuilder b(policy, d2t_, spec_.draft_vocab_size);
  ensure_scratch(policy.top_k);
  return grow_tree(
      b, spec_.hidden_size, s_.ids, s_.pos, s_.g, s_.h2, s_.logits,
      [&](Encoder& enc, int F, const Tensor& mask, int slot0) { encode_forward(enc, F, nullptr, length_, slot0, mask, 0); },
      [&](int F) { rescore(F, 0); });
}

}  // namespace eyas::speculative
