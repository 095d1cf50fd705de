#include "model/transformer.h"

#include <cmath>
#include <cstring>

#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/kv.h"
#include "ops/matmul.h"
#include "ops/model_misc.h"
#include "ops/moe.h"
#include "ops/norm.h"
#include "ops/rope.h"
#include "ops/softmax.h"

namespace eyas::model {

namespace {

const char* kOp = "Transformer";

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Takes weight `name` out of the map after checking its shape and type; float_only for norms/biases.
Tensor take(WeightMap& w, const std::string& name, std::vector<int64_t> shape, bool float_only, bool required = true) {
  auto it = w.find(name);
  if (it == w.end()) {
    if (required) fail(kOp, "missing weight '" + name + "' " + shape_str(shape));
    return Tensor{};
  }
  Tensor t = it->second;
  if (t.shape != shape)
    fail(kOp, "weight '" + name + "' has shape " + shape_str(t.shape) + ", expected " + shape_str(shape));
  if (float_only ? t.dtype != DType::F32 : !ops::matmul_supports(t.dtype))
    fail(kOp, "weight '" + name + "' has unsupported dtype " + type_traits(t.dtype).name +
                  (float_only ? " (norms and biases must be F32)" : ""));
  if (!t.buffer || t.offset + t.nbytes() > t.buffer->size())
    fail(kOp, "weight '" + name + "' " + t.describe() + " is larger than its buffer");
  return t;
}

// Row range [r0, r0+n) of a 2-D F32 tensor, or the same rows viewed with another trailing shape.
Tensor rows(const Tensor& t, int64_t r0, int64_t n, std::vector<int64_t> tail = {}) {
  Tensor v = t;
  const int64_t width = t.numel() / t.dim(0);
  v.offset = t.offset + size_t(r0 * width) * sizeof(float);
  v.shape = {n};
  if (tail.empty()) tail = {width};
  v.shape.insert(v.shape.end(), tail.begin(), tail.end());
  return v;
}

// First n entries of a 1-D tensor.
Tensor head(const Tensor& t, int64_t n) {
  Tensor v = t;
  v.shape = {n};
  return v;
}

Tensor reshape(const Tensor& t, std::vector<int64_t> shape) {
  Tensor v = t;
  v.shape = std::move(shape);
  return v;
}

}  // namespace

Transformer::Transformer(ModelSpec spec, WeightMap weights, int max_context, std::vector<int> aux_layers,
                         std::shared_ptr<Device> device, int chunk, bool fuse, DType kv_dtype)
    : spec_(std::move(spec)),
      device_(std::move(device)),
      aux_layers_(std::move(aux_layers)),
      chunk_(chunk),
      cache_((validate_spec(spec_), spec_.num_layers), spec_.num_kv_heads,
             max_context >= 1 ? max_context : (fail(kOp, "max_context must be >= 1"), 1), spec_.head_dim, kv_dtype),
      enc_(device_ ? *device_ : (fail(kOp, "no device"), *device_)) {
  if (chunk_ < 1) fail(kOp, "chunk must be >= 1");
  for (int a : aux_layers_)
    if (a < 0 || a > spec_.num_layers)
      fail(kOp, "aux layer " + std::to_string(a) + " out of range [0, " + std::to_string(spec_.num_layers) + "]");
  load(weights, fuse);
  inv_freq_ = Tensor::empty(DType::F32, {int64_t(spec_.rope_inv_freq.size())});
  std::memcpy(inv_freq_.data<float>(), spec_.rope_inv_freq.data(), inv_freq_.nbytes());
}

// Rows of several same-typed tensors stacked into one new tensor (a copy).
static Tensor concat_rows(const std::vector<const Tensor*>& parts) {
  std::vector<int64_t> shape = parts[0]->shape;
  shape[0] = 0;
  for (const Tensor* p : parts) shape[0] += p->dim(0);
  Tensor out = Tensor::empty(parts[0]->dtype, shape);
  size_t off = 0;
  for (const Tensor* p : parts) {
    std::memcpy(out.data<uint8_t>() + off, p->data<uint8_t>(), p->nbytes());
    off += p->nbytes();
  }
  return out;
}

void Transformer::load(WeightMap& w, bool fuse) {
  const ModelSpec& s = spec_;
  const int64_t H = s.hidden_size, V = s.vocab_size, D = s.head_dim;
  const int64_t q_rows = int64_t(s.num_heads) * D * (s.attn_output_gate ? 2 : 1), kv_rows = int64_t(s.num_kv_heads) * D;
  embd_ = take(w, "token_embd", {V, H}, false);
  out_norm_ = take(w, "output_norm", {H}, true);
  out_w_ = s.tie_embeddings ? embd_ : take(w, "output", {V, H}, false);
  for (int i = 0; i < s.num_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    Layer L;
    L.attn_norm = take(w, p + "attn_norm", {H}, true);
    L.wq = take(w, p + "attn_q", {q_rows, H}, false);
    L.wk = take(w, p + "attn_k", {kv_rows, H}, false);
    L.wv = take(w, p + "attn_v", {kv_rows, H}, false);
    if (s.qkv_bias) {
      L.bq = take(w, p + "attn_q.bias", {q_rows}, true);
      L.bk = take(w, p + "attn_k.bias", {kv_rows}, true);
      L.bv = take(w, p + "attn_v.bias", {kv_rows}, true);
    }
    if (s.qk_norm) {
      L.q_norm = take(w, p + "attn_q_norm", {D}, true);
      L.k_norm = take(w, p + "attn_k_norm", {D}, true);
    }
    if (fuse && L.wq.dtype == L.wk.dtype && L.wq.dtype == L.wv.dtype) {
      L.wqkv = concat_rows({&L.wq, &L.wk, &L.wv});
      if (s.qkv_bias) L.bqkv = concat_rows({&L.bq, &L.bk, &L.bv});
    }
    L.wo = take(w, p + "attn_output", {H, int64_t(s.num_heads) * D}, false);
    L.ffn_norm = take(w, p + "ffn_norm", {H}, true);
    // With a MoE spec, a layer without a router is a dense layer (Qwen3-MoE's mlp_only_layers).
    L.moe = s.has_moe && w.count(p + "ffn_gate_inp");
    if (L.moe) {
      const int64_t E = s.moe.num_experts, Ie = s.moe.expert_intermediate_size, Is = s.moe.shared_expert_intermediate_size;
      L.router = take(w, p + "ffn_gate_inp", {E, H}, false);
      L.gate_exps = take(w, p + "ffn_gate_exps", {E, Ie, H}, false);
      L.up_exps = take(w, p + "ffn_up_exps", {E, Ie, H}, false);
      L.down_exps = take(w, p + "ffn_down_exps", {E, H, Ie}, false);
      if (Is > 0) {
        L.gate_shexp = take(w, p + "ffn_gate_shexp", {Is, H}, false);
        L.up_shexp = take(w, p + "ffn_up_shexp", {Is, H}, false);
        L.down_shexp = take(w, p + "ffn_down_shexp", {H, Is}, false);
        if (s.moe.shared_expert_gate) L.gate_inp_shexp = take(w, p + "ffn_gate_inp_shexp", {1, H}, false);
      }
    } else {
      if (s.intermediate_size <= 0) fail(kOp, "layer " + std::to_string(i) + " is dense but intermediate_size is 0");
      const int64_t I = s.intermediate_size;
      L.gate = take(w, p + "ffn_gate", {I, H}, false);
      L.up = take(w, p + "ffn_up", {I, H}, false);
      L.down = take(w, p + "ffn_down", {H, I}, false);
      if (fuse && L.gate.dtype == L.up.dtype) L.wgu = concat_rows({&L.gate, &L.up});
    }
    layers_.push_back(std::move(L));
  }
}

void Transformer::ensure_scratch(int n) {
  if (n <= s_.rows) return;
  const ModelSpec& s = spec_;
  const int64_t H = s.hidden_size, D = s.head_dim, Hq = s.num_heads, Hkv = s.num_kv_heads;
  auto f32 = [&](int64_t cols) { return Tensor::empty(DType::F32, {n, cols}); };
  Scratch& c = s_;
  c.rows = n;
  c.ids = Tensor::empty(DType::I32, {n});
  c.pos = Tensor::empty(DType::I32, {n});
  c.x = f32(H), c.xn = f32(H), c.proj = f32(H);
  c.qf = f32(Hq * D * (s.attn_output_gate ? 2 : 1));
  c.q = s.attn_output_gate ? f32(Hq * D) : c.qf;
  if (s.attn_output_gate) c.gate_q = f32(Hq * D);
  c.k = f32(Hkv * D), c.v = f32(Hkv * D), c.o = f32(Hq * D);
  bool dense = false, moe = false, fused_qkv = false, fused_gu = false;
  for (const Layer& L : layers_) {
    (L.moe ? moe : dense) = true;
    fused_qkv = fused_qkv || L.wqkv.defined();
    fused_gu = fused_gu || L.wgu.defined();
  }
  if (fused_qkv) c.qkv = f32(c.qf.dim(1) + 2 * Hkv * D);
  if (dense) c.ff_gate = f32(s.intermediate_size), c.ff_up = f32(s.intermediate_size);
  if (fused_gu) c.gu = f32(2 * int64_t(s.intermediate_size));
  if (moe) {
    c.router = f32(s.moe.num_experts);
    if (s.moe.shared_expert_intermediate_size > 0) {
      c.sh_gate = f32(s.moe.shared_expert_intermediate_size), c.sh_up = f32(s.moe.shared_expert_intermediate_size);
      c.sh_out = f32(H), c.sh_g = f32(1);
    }
  }
}

void Transformer::validate_input(const ForwardInput& in, std::vector<int32_t>& positions) const {
  const char* op = "forward";
  const int n = cache_.length(), T = in.T;
  if (T < 1) fail(op, "tokens must not be empty");
  if (int64_t(n) + T > cache_.capacity())
    fail(op, std::to_string(T) + " tokens after " + std::to_string(n) + " committed exceed the capacity " +
                 std::to_string(cache_.capacity()));
  for (int i = 0; i < T; ++i)
    if (in.tokens[i] < 0 || in.tokens[i] >= spec_.vocab_size)
      fail(op, "token id " + std::to_string(in.tokens[i]) + " at index " + std::to_string(i) + " is outside [0, " +
                   std::to_string(spec_.vocab_size) + ")");
  positions.resize(size_t(T));
  if (!in.mask) {
    if (in.depths) fail(op, "depths need a mask");
    for (int i = 0; i < T; ++i) positions[i] = n + i;
    return;
  }
  // A tree node sees itself and earlier nodes only (parents precede children), and its depth is
  // the number of nodes it sees minus one, so its position continues its ancestor chain.
  for (int i = 0; i < T; ++i) {
    const uint8_t* row = in.mask + int64_t(i) * T;
    if (!row[i]) fail(op, "mask[" + std::to_string(i) + ", " + std::to_string(i) + "] must be set (a node sees itself)");
    int seen = 0;
    for (int j = 0; j < T; ++j) {
      if (!row[j]) continue;
      if (j > i) fail(op, "mask[" + std::to_string(i) + ", " + std::to_string(j) + "] is set: a node may only see earlier nodes");
      ++seen;
    }
    const int depth = in.depths ? in.depths[i] : seen - 1;
    if (depth != seen - 1)
      fail(op, "depths[" + std::to_string(i) + "] = " + std::to_string(depth) + " but the mask row shows " +
                   std::to_string(seen - 1) + " ancestors");
    positions[i] = n + depth;
  }
}

ForwardResult Transformer::forward(const ForwardInput& in) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int32_t> positions;
  validate_input(in, positions);
  const ModelSpec& s = spec_;
  const int T = in.T, n = cache_.length(), H = s.hidden_size;
  const bool tree = in.mask != nullptr;
  ForwardResult r;
  if (in.logits == LogitsMode::All) r.logits = Tensor::empty(DType::F32, {T, s.vocab_size});
  if (in.logits == LogitsMode::Last) r.logits = Tensor::empty(DType::F32, {1, s.vocab_size});
  const int A = int(aux_layers_.size());
  if (in.capture_aux) r.aux = Tensor::empty(DType::F32, {T, int64_t(A) * H});
  ensure_scratch(std::min(T, chunk_));
  cache_.set_pending(0);
  for (int c0 = 0; c0 < T; c0 += chunk_) {
    const int c1 = std::min(T, c0 + chunk_), t = c1 - c0;
    // Host-written inputs of this chunk; the encoder is committed before the next chunk reuses them.
    std::memcpy(s_.ids.data<int32_t>(), in.tokens + c0, size_t(t) * sizeof(int32_t));
    std::memcpy(s_.pos.data<int32_t>(), positions.data() + c0, size_t(t) * sizeof(int32_t));
    Tensor mask;
    if (tree) {
      // Queries c0..c1 over new slots 0..c1 (the kernel's "last Tq of Tn" layout).
      mask = Tensor::empty(DType::U8, {t, c1});
      for (int i = 0; i < t; ++i) std::memcpy(mask.data<uint8_t>() + int64_t(i) * c1, in.mask + int64_t(c0 + i) * T, size_t(c1));
    }
    Encoder& enc = enc_;
    enc.discard();  // drop anything a failed earlier call left recorded
    const Views w = make_views(enc, t);
    const Tensor& x = w.x;
    ops::embedding(enc, embd_, head(s_.ids, t), x);
    for (int l = 0; l <= s.num_layers; ++l) {
      if (in.capture_aux)
        for (int a = 0; a < A; ++a)
          if (aux_layers_[a] == l) ops::copy_cols(enc, x, 0, rows(r.aux, c0, t), a * H, H);
      if (l < s.num_layers) encode_layer(enc, w, l, n + c0, tree ? n : n + c0, mask);
    }
    if (in.logits == LogitsMode::All) {
      Tensor xn = rows(s_.xn, 0, t);
      ops::rms_norm(enc, x, out_norm_, xn, s.rms_eps);
      ops::matmul(enc, xn, out_w_, rows(r.logits, c0, t));
    } else if ((in.logits == LogitsMode::Last || in.logits == LogitsMode::Argmax) && c1 == T) {
      Tensor xn = rows(s_.xn, 0, 1);
      ops::rms_norm(enc, rows(s_.x, t - 1, 1), out_norm_, xn, s.rms_eps);
      if (in.logits == LogitsMode::Last) {
        ops::matmul(enc, xn, out_w_, r.logits);
      } else {
        if (!s_.last_logits.defined()) {
          s_.last_logits = Tensor::empty(DType::F32, {1, s.vocab_size});
          s_.last_argmax = Tensor::empty(DType::I32, {1});
        }
        ops::matmul(enc, xn, out_w_, s_.last_logits);
        ops::argmax(enc, s_.last_logits, s_.last_argmax);
      }
    }
    enc.commit();
  }
  if (in.logits == LogitsMode::Argmax) r.argmax = s_.last_argmax.data<int32_t>()[0];
  cache_.set_pending(T);
  return r;
}

// Splits the columns of a fused matmul output [t, sum of widths] into the given [t, width]
// tensors: for one row they are plain views (no dispatch), for more rows copies.
static void split_cols(Encoder& enc, const Tensor& fused, std::initializer_list<Tensor*> parts) {
  const int64_t t = fused.dim(0);
  int64_t col = 0;
  for (Tensor* p : parts) {
    const int64_t w = p->dim(1);
    if (t == 1) {
      Tensor v = fused;
      v.offset = fused.offset + size_t(col) * sizeof(float);
      v.shape = {1, w};
      *p = v;
    } else {
      ops::copy_cols(enc, fused, int(col), *p, 0, int(w));
    }
    col += w;
  }
}

Transformer::Views Transformer::make_views(Encoder& enc, int t) const {
  const ModelSpec& s = spec_;
  const int64_t D = s.head_dim, Hq = s.num_heads, Hkv = s.num_kv_heads;
  Views w;
  w.t = t;
  w.x = rows(s_.x, 0, t), w.xn = rows(s_.xn, 0, t), w.proj = rows(s_.proj, 0, t);
  w.qf = rows(s_.qf, 0, t), w.k = rows(s_.k, 0, t), w.v = rows(s_.v, 0, t), w.o = rows(s_.o, 0, t);
  w.pos = head(s_.pos, t);
  if (s_.qkv.defined()) w.qkv = rows(s_.qkv, 0, t);
  if (s_.ff_gate.defined()) w.g = rows(s_.ff_gate, 0, t), w.u = rows(s_.ff_up, 0, t);
  if (s_.gu.defined()) w.gu = rows(s_.gu, 0, t);
  if (s_.router.defined()) w.router = rows(s_.router, 0, t);
  if (s_.sh_gate.defined()) {
    w.sh_gate = rows(s_.sh_gate, 0, t), w.sh_up = rows(s_.sh_up, 0, t), w.sh_out = rows(s_.sh_out, 0, t);
    w.sh_g = rows(s_.sh_g, 0, t);
  }
  // One row: the fused outputs' columns are the q/k/v (gate/up) inputs, as views (no copy dispatch).
  if (t == 1 && w.qkv.defined()) split_cols(enc, w.qkv, {&w.qf, &w.k, &w.v});
  if (t == 1 && w.gu.defined()) split_cols(enc, w.gu, {&w.g, &w.u});
  w.q = w.qf;
  if (s.attn_output_gate) {
    w.q = rows(s_.q, 0, t), w.gate_q = rows(s_.gate_q, 0, t);
    w.qf_heads = reshape(w.qf, {t * Hq, 2 * D}), w.q_heads = reshape(w.q, {t * Hq, D});
    w.gate_heads = reshape(w.gate_q, {t * Hq, D});
  }
  w.q3 = reshape(w.q, {t, Hq, D}), w.k3 = reshape(w.k, {t, Hkv, D}), w.v3 = reshape(w.v, {t, Hkv, D});
  w.o3 = reshape(w.o, {t, Hq, D});
  w.q_flat = reshape(w.q, {t * Hq, D}), w.k_flat = reshape(w.k, {t * Hkv, D});
  if (t == 1 && w.qkv.defined() && !s.attn_output_gate) w.qk3 = reshape(w.qkv, {1, Hq + Hkv, D});
  return w;
}

void Transformer::encode_layer(Encoder& enc, const Views& w, int l, int slot0, int prefix, const Tensor& mask) {
  const ModelSpec& s = spec_;
  const Layer& L = layers_[l];
  const int64_t D = s.head_dim;
  const float eps = s.rms_eps;
  const int t = w.t;
  const Tensor &x = w.x, &xn = w.xn, &proj = w.proj;

  // Attention block.
  ops::rms_norm(enc, x, L.attn_norm, xn, eps);
  if (L.wqkv.defined()) {
    ops::matmul(enc, xn, L.wqkv, w.qkv);
    if (s.qkv_bias) ops::add(enc, w.qkv, L.bqkv, w.qkv);
    if (t > 1) {
      Tensor qf = w.qf, k = w.k, v = w.v;
      split_cols(enc, w.qkv, {&qf, &k, &v});
    }
  } else {
    ops::matmul(enc, xn, L.wq, w.qf);
    ops::matmul(enc, xn, L.wk, w.k);
    ops::matmul(enc, xn, L.wv, w.v);
  }
  if (s.qkv_bias && !L.wqkv.defined()) {
    ops::add(enc, w.qf, L.bq, w.qf);
    ops::add(enc, w.k, L.bk, w.k);
    ops::add(enc, w.v, L.bv, w.v);
  }
  if (s.attn_output_gate) {
    // attn_q rows are per head [q (D) | gate (D)].
    ops::copy_cols(enc, w.qf_heads, 0, w.q_heads, 0, int(D));
    ops::copy_cols(enc, w.qf_heads, int(D), w.gate_heads, 0, int(D));
  }
  if (s.qk_norm) {
    ops::rms_norm(enc, w.q_flat, L.q_norm, w.q_flat, eps);
    ops::rms_norm(enc, w.k_flat, L.k_norm, w.k_flat, eps);
  }
  if (w.qk3.defined() && L.wqkv.defined()) {
    // Rope rotates each (token, head) row on its own, so one call over q|k gives the same bits.
    ops::rope(enc, w.qk3, w.pos, inv_freq_, s.rot_dim, s.rope_style, w.qk3);
  } else {
    ops::rope(enc, w.q3, w.pos, inv_freq_, s.rot_dim, s.rope_style, w.q3);
    ops::rope(enc, w.k3, w.pos, inv_freq_, s.rot_dim, s.rope_style, w.k3);
  }
  ops::kv_write(enc, w.k3, cache_.k(l), slot0);
  ops::kv_write(enc, w.v3, cache_.v(l), slot0);
  ops::attention(enc, w.q3, cache_.k(l), cache_.v(l), prefix, mask, 1.0f / std::sqrt(float(D)), w.o3);
  if (s.attn_output_gate) ops::sigmoid_mul(enc, w.o, w.gate_q, w.o);
  ops::matmul(enc, w.o, L.wo, proj);
  ops::add(enc, x, proj, x);

  // Feed-forward block.
  ops::rms_norm(enc, x, L.ffn_norm, xn, eps);
  if (!L.moe) {
    if (L.wgu.defined()) {
      ops::matmul(enc, xn, L.wgu, w.gu);
      if (t > 1) {
        Tensor g = w.g, u = w.u;
        split_cols(enc, w.gu, {&g, &u});
      }
    } else {
      ops::matmul(enc, xn, L.gate, w.g);
      ops::matmul(enc, xn, L.up, w.u);
    }
    ops::silu_mul(enc, w.g, w.u, w.g);
    ops::matmul(enc, w.g, L.down, proj);
  } else {
    ops::matmul(enc, xn, L.router, w.router);
    ops::moe_ffn(enc, xn, w.router, L.gate_exps, L.up_exps, L.down_exps, s.moe.top_k, s.moe.norm_topk_prob, proj);
    if (L.gate_shexp.defined()) {
      const Tensor &g = w.sh_gate, &u = w.sh_up, &y = w.sh_out;
      ops::matmul(enc, xn, L.gate_shexp, g);
      ops::matmul(enc, xn, L.up_shexp, u);
      ops::silu_mul(enc, g, u, g);
      ops::matmul(enc, g, L.down_shexp, y);
      if (L.gate_inp_shexp.defined()) {
        ops::matmul(enc, xn, L.gate_inp_shexp, w.sh_g);
        ops::sigmoid_scale_rows(enc, y, w.sh_g, y);
      }
      ops::add(enc, proj, y, proj);
    }
  }
  ops::add(enc, x, proj, x);
}

void Transformer::commit(const std::vector<int32_t>& nodes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (int64_t(cache_.length()) + int64_t(nodes.size()) > cache_.capacity()) fail("commit", "too many nodes");
  enc_.discard();
  cache_.commit(enc_, nodes);
  enc_.commit();
}

void Transformer::truncate(int n) {
  std::lock_guard<std::mutex> lock(mutex_);
  cache_.truncate(n);
}

void Transformer::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  cache_.reset();
}

}  // namespace eyas::model
