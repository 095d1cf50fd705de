#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/layers/registry.h"
#include "model/views.h"
#include "model/weights.h"
#include "ops/embedding.h"
#include "ops/matmul.h"
#include "ops/model_misc.h"
#include "ops/norm.h"
#include "ops/softmax.h"

namespace eyas::model {

namespace {
const char* kOp = "Transformer";

// Rows of a forward's input that go through the output head: every row, the last, or none.
int head_rows(const ForwardInput& in) {
  if (in.logits == LogitsMode::All || in.logits == LogitsMode::ArgmaxAll) return in.T;
  return in.logits == LogitsMode::None ? 0 : 1;
}
}  // namespace

Transformer::Transformer(ModelSpec spec, WeightMap weights, int max_context, std::vector<int> aux_layers,
                         std::shared_ptr<Device> device, int chunk, bool fuse, DType kv_dtype)
    : spec_(std::move(spec)),
      device_(std::move(device)),
      aux_layers_(std::move(aux_layers)),
      chunk_(chunk),
      capacity_(max_context),
      kv_dtype_(kv_dtype),
      enc_(device_ ? *device_ : (fail(kOp, "no device"), *device_)) {
  validate_spec(spec_);
  if (capacity_ < 1) fail(kOp, "max_context must be >= 1");
  if (chunk_ < 1) fail(kOp, "chunk must be >= 1");
  for (int a : aux_layers_)
    if (a < 0 || a > spec_.num_layers)
      fail(kOp, "aux layer " + std::to_string(a) + " out of range [0, " + std::to_string(spec_.num_layers) + "]");
  build(weights, fuse);
}

void Transformer::build(const WeightMap& w, bool fuse) {
  const ModelSpec& s = spec_;
  const int64_t H = s.hidden_size, V = s.vocab_size;
  for (const auto& [name, t] : w)
    if (name != "token_embd" || s.tie_embeddings) weight_bytes_ += t.nbytes();
  embd_ = take(w, "token_embd", {V, H}, false);
  out_norm_ = take(w, "output_norm", {H}, true);
  out_w_ = s.tie_embeddings ? embd_ : take(w, "output", {V, H}, false);
  const std::vector<BlockSpec> blocks = resolve_layers(s, w);
  for (int i = 0; i < s.num_layers; ++i) {
    for (auto [role, name] : {std::pair{Role::Mixer, &blocks[i].mixer}, std::pair{Role::Ffn, &blocks[i].ffn}}) {
      const LayerKind& kind = find_layer_kind(*name);
      if (kind.role != role)
        fail(kOp, "layer " + std::to_string(i) + ": '" + *name + "' is not " +
                      (role == Role::Mixer ? "a mixer kind" : "an FFN kind"));
      Slot slot{kind.name, i, kind.build(LayerInit{s, i, w, fuse}), nullptr, nullptr};
      for (const Slot& o : layers_)
        if (std::strcmp(o.kind, slot.kind) == 0) slot.ws = o.ws;
      if (!slot.ws) {
        workspaces_.push_back(slot.layer->make_workspace());
        slot.ws = workspaces_.back().get();
      }
      slot.layer->join(*slot.ws);
      slot.state = slot.layer->make_state(StateInit{capacity_, kv_dtype_});
      layers_.push_back(std::move(slot));
    }
  }
}

void Transformer::ensure_scratch(int n) {
  if (n <= s_.rows) return;
  const int64_t H = spec_.hidden_size;
  s_.rows = n;
  s_.ids = Tensor::empty(DType::I32, {n});
  s_.pos = Tensor::empty(DType::I32, {n});
  s_.x = Tensor::empty(DType::F32, {n, H}), s_.xn = Tensor::empty(DType::F32, {n, H});
  s_.proj = Tensor::empty(DType::F32, {n, H});
  for (auto& ws : workspaces_) ws->reserve(n);
}

void Transformer::plan_forward(const ForwardInput& in) {
  const char* op = "forward";
  const int n = length_, T = in.T;
  if (T < 1) fail(op, "tokens must not be empty");
  if (int64_t(n) + T > capacity_)
    fail(op, std::to_string(T) + " tokens after " + std::to_string(n) + " committed exceed the capacity " +
                 std::to_string(capacity_));
  for (int i = 0; i < T; ++i)
    if (in.tokens[i] < 0 || in.tokens[i] >= spec_.vocab_size)
      fail(op, "token id " + std::to_string(in.tokens[i]) + " at index " + std::to_string(i) + " is outside [0, " +
                   std::to_string(spec_.vocab_size) + ")");
  if (in.mask && in.parents) fail(op, "give a tree as mask or as parents, not both");
  if (in.commit_all && (in.mask || in.parents)) fail(op, "commit_all needs a causal forward (no mask or parents)");
  ForwardPlan& p = plan_;
  p.length = n, p.T = T, p.causal = !in.mask && !in.parents, p.commit_all = in.commit_all;
  p.positions.resize(size_t(T)), p.parents.resize(size_t(T));
  mask_ = nullptr;
  if (p.causal) {
    if (in.depths) fail(op, "depths need a mask");
    for (int i = 0; i < T; ++i) p.positions[i] = n + i, p.parents[i] = i - 1;
    return;
  }
  const uint8_t* mask = in.mask;
  if (in.parents) {
    // A node sees its parent's row plus itself.
    parent_mask_.assign(size_t(T) * T, 0);
    for (int i = 0; i < T; ++i) {
      const int par = in.parents[i];
      if (par < -1 || par >= i)
        fail(op, "parents[" + std::to_string(i) + "] = " + std::to_string(par) + " must be in [-1, " +
                     std::to_string(i) + "): a parent precedes its children");
      uint8_t* row = parent_mask_.data() + int64_t(i) * T;
      if (par >= 0) std::memcpy(row, parent_mask_.data() + int64_t(par) * T, size_t(par) + 1);
      row[i] = 1;
    }
    mask = parent_mask_.data();
  }
  // A tree node sees itself and exactly its ancestors, which precede it; its parent is the last
  // node it sees before itself, and its depth (the number of ancestors) continues the prefix.
  for (int i = 0; i < T; ++i) {
    const uint8_t* row = mask + int64_t(i) * T;
    if (!row[i]) fail(op, "mask[" + std::to_string(i) + ", " + std::to_string(i) + "] must be set (a node sees itself)");
    int seen = 0, par = -1;
    for (int j = 0; j < T; ++j) {
      if (!row[j]) continue;
      if (j > i) fail(op, "mask[" + std::to_string(i) + ", " + std::to_string(j) + "] is set: a node may only see earlier nodes");
      ++seen;
      if (j < i) par = j;
    }
    const int depth = in.depths ? in.depths[i] : seen - 1;
    if (depth != seen - 1)
      fail(op, "depths[" + std::to_string(i) + "] = " + std::to_string(depth) + " but the mask row shows " +
                   std::to_string(seen - 1) + " ancestors");
    const uint8_t* prow = par >= 0 ? mask + int64_t(par) * T : nullptr;
    for (int j = 0; j < par; ++j)
      if (bool(row[j]) != bool(prow[j]))
        fail(op, "mask row " + std::to_string(i) + " is not its parent's row " + std::to_string(par) +
                     " plus itself: a node must see exactly its ancestors");
    p.positions[i] = n + depth, p.parents[i] = par;
  }
  mask_ = mask;
}

ForwardResult Transformer::forward(const ForwardInput& in) {
  std::lock_guard<std::mutex> lock(mutex_);
  plan_forward(in);
  const ModelSpec& s = spec_;
  const int T = in.T, H = s.hidden_size;
  ForwardResult r;
  if (in.logits == LogitsMode::All) r.logits = Tensor::empty(DType::F32, {T, s.vocab_size});
  if (in.logits == LogitsMode::Last) r.logits = Tensor::empty(DType::F32, {1, s.vocab_size});
  const int A = int(aux_layers_.size());
  if (in.capture_aux) r.aux = Tensor::empty(DType::F32, {T, int64_t(A) * H});
  if (in.logits == LogitsMode::ArgmaxAll) {
    r.argmaxes = Tensor::empty(DType::I32, {T});
    const int rows = std::min(T, chunk_);
    if (!s_.row_logits.defined() || s_.row_logits.dim(0) < rows)
      s_.row_logits = Tensor::empty(DType::F32, {rows, s.vocab_size});
  }
  ensure_scratch(std::min(T, chunk_));
  const bool in_place = prepare_states_locked();
  try {
    run_chunks(in, r);
  } catch (...) {
    if (in_place) reset_locked();  // a state was part way through its committed rows: start the sequence over
    throw;
  }
  pending_ = T;
  if (in.commit_all) commit_all_locked();
  if (in.logits == LogitsMode::Argmax) {
    r.argmax = s_.last_argmax.data<int32_t>()[0];
    // argmax of an all-NaN row is 0, often an end-of-text id: fail instead of ending the text silently
    if (std::isnan(s_.last_logits.data<float>()[r.argmax]))
      fail(kOp, "the logits are NaN (NaN or Inf in the model's weights?)");
  }
  return r;
}

void Transformer::run_chunks(const ForwardInput& in, ForwardResult& r) {
  const ModelSpec& s = spec_;
  const int T = in.T, n = length_, H = s.hidden_size;
  const bool tree = mask_ != nullptr;
  const int A = int(aux_layers_.size());
  for (int c0 = 0; c0 < T; c0 += chunk_) {
    const int c1 = std::min(T, c0 + chunk_), t = c1 - c0;
    // Host-written inputs of this chunk; the encoder is committed before the next chunk reuses them.
    std::memcpy(s_.ids.data<int32_t>(), in.tokens + c0, size_t(t) * sizeof(int32_t));
    std::memcpy(s_.pos.data<int32_t>(), plan_.positions.data() + c0, size_t(t) * sizeof(int32_t));
    Chunk c;
    c.t = t, c.slot0 = n + c0, c.prefix = tree ? n : n + c0;
    if (tree) {
      // Queries c0..c1 over new slots 0..c1 (the attention kernel's "last Tq of Tn" layout).
      c.mask = Tensor::empty(DType::U8, {t, c1});
      for (int i = 0; i < t; ++i) std::memcpy(c.mask.data<uint8_t>() + int64_t(i) * c1, mask_ + int64_t(c0 + i) * T, size_t(c1));
    }
    Encoder& enc = enc_;
    enc.discard();  // drop anything a failed earlier call left recorded
    c.x = rows(s_.x, 0, t), c.xn = rows(s_.xn, 0, t), c.proj = rows(s_.proj, 0, t), c.pos = head(s_.pos, t);
    for (auto& ws : workspaces_) ws->bind(enc, t);
    ops::embedding(enc, embd_, head(s_.ids, t), c.x);
    size_t k = 0;
    for (int b = 0; b <= s.num_layers; ++b) {
      if (in.capture_aux)
        for (int a = 0; a < A; ++a)
          if (aux_layers_[a] == b) ops::copy_cols(enc, c.x, 0, rows(r.aux, c0, t), a * H, H);
      for (; k < layers_.size() && layers_[k].block == b; ++k) {
        const Slot& l = layers_[k];
        l.layer->encode(enc, c, *l.ws, l.state.get());
      }
    }
    if (in.logits == LogitsMode::All) {
      ops::rms_norm(enc, c.x, out_norm_, c.xn, s.rms_eps);
      ops::matmul(enc, c.xn, out_w_, rows(r.logits, c0, t));
    } else if (in.logits == LogitsMode::ArgmaxAll) {
      ops::rms_norm(enc, c.x, out_norm_, c.xn, s.rms_eps);
      ops::matmul(enc, c.xn, out_w_, rows(s_.row_logits, 0, t));
      ops::argmax(enc, rows(s_.row_logits, 0, t), reshape(rows(r.argmaxes, c0, t), {t}));
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
    if (in.logits == LogitsMode::ArgmaxAll)  // as for Argmax: an all-NaN row must not read as token 0
      for (int i = 0; i < t; ++i)
        if (std::isnan(s_.row_logits.data<float>()[int64_t(i) * s.vocab_size + r.argmaxes.data<int32_t>()[c0 + i]]))
          fail(kOp, "the logits are NaN (NaN or Inf in the model's weights?)");
  }
}

std::vector<ForwardResult> Transformer::forward_batch(const std::vector<Transformer*>& seqs,
                                                     const std::vector<ForwardInput>& ins) {
  const char* op = "forward_batch";
  if (seqs.empty() || seqs.size() != ins.size()) fail(op, "needs one input per sequence, and at least one");
  for (size_t i = 0; i < seqs.size(); ++i) {
    Transformer* q = seqs[i];
    if (!q) fail(op, "sequence " + std::to_string(i) + " is null");
    for (size_t j = 0; j < i; ++j)
      if (seqs[j] == q) fail(op, "sequence " + std::to_string(i) + " appears twice");
    if (q->embd_.data<uint8_t>() != embd_.data<uint8_t>() || q->layers_.size() != layers_.size() ||
        q->aux_layers_ != aux_layers_ || q->device_.get() != device_.get())
      fail(op, "sequence " + std::to_string(i) + " was not built from this model's weights, aux layers and device");
  }
  if (seqs.size() > 1)
    for (const Slot& l : layers_)
      if (l.state && !l.state->batchable())
        fail(op, std::string("layer kind '") + l.kind + "' keeps a state that cannot run beside other sequences");
  // Lock every sequence in one global order so two batches over shared sequences cannot deadlock.
  // The batch runs on this Transformer's layers and scratch: it is locked even when not in seqs.
  std::vector<Transformer*> order(seqs);
  if (std::find(order.begin(), order.end(), this) == order.end()) order.push_back(this);
  std::sort(order.begin(), order.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  for (Transformer* q : order) locks.emplace_back(q->mutex_);

  const int n_seq = int(seqs.size());
  Chunk c;
  int total = 0;
  for (int i = 0; i < n_seq; ++i) {
    Transformer& q = *seqs[size_t(i)];
    q.plan_forward(ins[size_t(i)]);
    Segment g;
    g.row0 = total, g.t = ins[size_t(i)].T, g.slot0 = q.length_, g.prefix = q.length_;
    if (q.mask_) {
      g.mask = Tensor::empty(DType::U8, {g.t, g.t});
      std::memcpy(g.mask.data<uint8_t>(), q.mask_, size_t(g.t) * size_t(g.t));
    }
    c.segments.push_back(std::move(g));
    total += ins[size_t(i)].T;
  }
  if (total > chunk_)
    fail(op, std::to_string(total) + " rows in all exceed the chunk of " + std::to_string(chunk_) +
                 " rows; run prefills on their own");
  std::vector<Transformer*> in_place;  // sequences whose states update their committed rows in this forward
  for (Transformer* q : seqs)
    if (q->prepare_states_locked()) in_place.push_back(q);
  std::vector<ForwardResult> out(static_cast<size_t>(n_seq));
  Tensor logits, argmax;
  try {
    run_batch(seqs, ins, c, total, out, logits, argmax);
  } catch (...) {
    for (Transformer* q : in_place) q->reset_locked();  // part way through their committed state: start over
    throw;
  }
  int r = 0;
  for (int i = 0; i < n_seq; ++i) {
    const ForwardInput& in = ins[size_t(i)];
    ForwardResult& res = out[size_t(i)];
    if (in.logits == LogitsMode::All) res.logits = rows(logits, r, in.T), r += in.T;
    if (in.logits == LogitsMode::Last) res.logits = rows(logits, r, 1), r += 1;
    if (in.logits == LogitsMode::Argmax) res.argmax = argmax.data<int32_t>()[r], r += 1;
    if (in.logits == LogitsMode::ArgmaxAll) res.argmaxes = reshape(rows(argmax, r, in.T), {in.T}), r += in.T;
    Transformer& q = *seqs[size_t(i)];
    q.pending_ = in.T;
    if (in.commit_all) q.commit_all_locked();
  }
  return out;
}

void Transformer::run_batch(const std::vector<Transformer*>& seqs, const std::vector<ForwardInput>& ins, Chunk& c,
                            int total, std::vector<ForwardResult>& out, Tensor& logits, Tensor& argmax) {
  const ModelSpec& s = spec_;
  const int H = s.hidden_size, A = int(aux_layers_.size()), n_seq = int(seqs.size());
  int logit_rows = 0;
  for (int i = 0; i < n_seq; ++i) {
    const ForwardInput& in = ins[size_t(i)];
    if (in.capture_aux) out[size_t(i)].aux = Tensor::empty(DType::F32, {in.T, int64_t(A) * H});
    logit_rows += head_rows(in);
  }
  ensure_scratch(total);
  for (int i = 0; i < n_seq; ++i) {
    const Segment& g = c.segments[size_t(i)];
    std::memcpy(s_.ids.data<int32_t>() + g.row0, ins[size_t(i)].tokens, size_t(g.t) * sizeof(int32_t));
    std::memcpy(s_.pos.data<int32_t>() + g.row0, seqs[size_t(i)]->plan_.positions.data(), size_t(g.t) * sizeof(int32_t));
  }
  Encoder& enc = enc_;
  enc.discard();
  c.t = total;
  c.slot0 = c.segments[0].slot0, c.prefix = c.segments[0].prefix, c.mask = c.segments[0].mask;  // one sequence: encode()
  c.x = rows(s_.x, 0, total), c.xn = rows(s_.xn, 0, total), c.proj = rows(s_.proj, 0, total), c.pos = head(s_.pos, total);
  for (auto& ws : workspaces_) ws->bind(enc, total);
  ops::embedding(enc, embd_, head(s_.ids, total), c.x);
  std::vector<LayerState*> states(static_cast<size_t>(n_seq));
  size_t k = 0;
  for (int b = 0; b <= s.num_layers; ++b) {
    for (int a = 0; a < A; ++a)
      if (aux_layers_[size_t(a)] == b)
        for (int i = 0; i < n_seq; ++i)
          if (ins[size_t(i)].capture_aux) {
            const Segment& g = c.segments[size_t(i)];
            ops::copy_cols(enc, rows(c.x, g.row0, g.t), 0, out[size_t(i)].aux, a * H, H);
          }
    for (; k < layers_.size() && layers_[k].block == b; ++k) {
      for (int i = 0; i < n_seq; ++i) states[size_t(i)] = seqs[size_t(i)]->layers_[k].state.get();
      layers_[k].layer->encode_segments(enc, c, *layers_[k].ws, states);
    }
  }
  // Every sequence's logit rows go through the head as one matmul: gathered into proj, normed into xn.
  if (logit_rows > 0) {
    int r = 0;
    for (int i = 0; i < n_seq; ++i) {
      const ForwardInput& in = ins[size_t(i)];
      const Segment& g = c.segments[size_t(i)];
      const int n = head_rows(in), from = g.row0 + g.t - n;
      if (n == 0) continue;
      ops::copy_cols(enc, rows(c.x, from, n), 0, rows(s_.proj, r, n), 0, H);
      r += n;
    }
    logits = Tensor::empty(DType::F32, {logit_rows, s.vocab_size});
    argmax = Tensor::empty(DType::I32, {logit_rows});
    ops::rms_norm(enc, rows(s_.proj, 0, logit_rows), out_norm_, rows(s_.xn, 0, logit_rows), s.rms_eps);
    ops::matmul(enc, rows(s_.xn, 0, logit_rows), out_w_, logits);
    ops::argmax(enc, logits, argmax);
  }
  enc.commit();
}

bool Transformer::prepare_states_locked() {
  pending_ = 0;
  bool in_place = false;
  for (Slot& l : layers_)
    if (l.state) l.state->prepare(plan_), in_place = in_place || l.state->updates_committed();
  return in_place;
}

void Transformer::commit_all_locked() {
  all_rows_.resize(size_t(pending_));
  for (int i = 0; i < pending_; ++i) all_rows_[size_t(i)] = i;
  commit_locked(all_rows_);
}

void Transformer::commit(const std::vector<int32_t>& nodes) {
  std::lock_guard<std::mutex> lock(mutex_);
  commit_locked(nodes);
}

void Transformer::commit_locked(const std::vector<int32_t>& nodes) {
  const char* op = "commit";
  const int m = int(nodes.size());
  if (int64_t(length_) + m > capacity_) fail(op, "too many nodes");
  CommitPlan plan;
  plan.length = length_, plan.nodes = &nodes;
  for (int j = 0; j < m; ++j) {
    if (nodes[j] < 0 || nodes[j] >= pending_)
      fail(op, "node " + std::to_string(nodes[j]) + " out of range: the last forward wrote " + std::to_string(pending_) +
                   " rows");
    if (j > 0 && nodes[j] <= nodes[j - 1]) fail(op, "nodes must be strictly increasing");
    plan.identity = plan.identity && nodes[j] == j;
  }
  if (!plan.identity) {
    plan.src_slots = Tensor::empty(DType::I32, {m});
    for (int j = 0; j < m; ++j) plan.src_slots.data<int32_t>()[j] = length_ + nodes[j];
  }
  enc_.discard();
  for (Slot& l : layers_)
    if (l.state) l.state->commit(enc_, plan);
  enc_.commit();
  length_ += m;
  pending_ = 0;
}

void Transformer::truncate(int n) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (n < 0 || n > length_)
    fail("truncate", "length must be in [0, " + std::to_string(length_) + "], got " + std::to_string(n));
  for (Slot& l : layers_)
    if (l.state) l.state->truncate(length_, n);
  length_ = n;
  pending_ = 0;
}

void Transformer::set_prefill_checkpoints(bool on) {
  std::lock_guard<std::mutex> lock(mutex_);
  prefill_checkpoints_ = on;
  for (Slot& l : layers_)
    if (l.state) l.state->keep_prefill_checkpoints(on);
}

int Transformer::truncatable(int n) const {
  n = std::max(0, std::min(n, length_));
  for (const Slot& l : layers_)
    if (l.state) n = std::min(n, l.state->truncatable(length_, n));
  return n;
}

void Transformer::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  reset_locked();
}

void Transformer::reset_locked() {
  for (Slot& l : layers_)
    if (l.state) l.state->reset();
  length_ = 0, pending_ = 0;
}

size_t Transformer::state_bytes() const {
  size_t total = 0;
  for (const Slot& l : layers_)
    if (l.state) total += l.state->bytes(length_);
  return total;
}

size_t Transformer::held_state_bytes() const {
  size_t total = 0;
  for (const Slot& l : layers_)
    if (l.state) total += l.state->held_bytes();
  return total;
}

std::vector<std::string> Transformer::layer_kinds() const {
  std::vector<std::string> out;
  for (const Slot& l : layers_) out.push_back(l.kind);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Transformer::layer_state(int index) const {
  if (index < 0 || index >= int(layers_.size()))
    fail("layer_state", "index " + std::to_string(index) + " outside [0, " + std::to_string(layers_.size()) + ")");
  const Slot& l = layers_[size_t(index)];
  return l.state ? l.state->committed() : std::vector<std::pair<std::string, Tensor>>{};
}

}  // namespace eyas::model
