#include "model/layers/gdn_state.h"

#include <cstring>
#include <utility>

#include "model/views.h"
#include "ops/gdn.h"

namespace eyas::model {

namespace {

Tensor zeros(std::vector<int64_t> shape) {
  Tensor t = Tensor::empty(DType::F32, std::move(shape));
  std::memset(t.data<float>(), 0, t.nbytes());
  return t;
}

}  // namespace

GdnState::GdnState(const ops::GdnDims& d, int conv_kernel, Tensor A, Tensor dt_bias)
    : d_(d), K_(conv_kernel), A_(std::move(A)), dt_bias_(std::move(dt_bias)) {
  const int64_t C = 2 * int64_t(d.hk) * d.dk + int64_t(d.hv) * d.dv;
  conv_c_ = zeros({K_ - 1, C}), state_c_ = zeros({d.hv, d.dk, d.dv});
}

void GdnState::reserve(int n) {
  if (n <= rows_) return;
  const int64_t C = conv_c_.dim(1);
  rows_ = n;
  u_ = Tensor::empty(DType::F32, {n, C}), qkv_ = Tensor::empty(DType::F32, {n, C});
  a_ = Tensor::empty(DType::F32, {n, d_.hv}), b_ = Tensor::empty(DType::F32, {n, d_.hv});
}

void GdnState::prepare(const ForwardPlan& plan) {
  length_ = plan.length, causal_ = plan.causal, T_ = plan.T;
  in_place_ = causal_ && plan.commit_all;
  keep_ = !in_place_ && (!causal_ || T_ <= kKeepRows);  // in place, nothing is replayed
  if (keep_) reserve(T_);
  if (causal_ && !in_place_ && !conv_w_.defined())
    conv_w_ = Tensor::empty(DType::F32, conv_c_.shape), state_w_ = Tensor::empty(DType::F32, state_c_.shape);
  if (!parents_.defined() || parents_.dim(0) < plan.T) parents_ = Tensor::empty(DType::I32, {plan.T});
  int32_t* p = parents_.data<int32_t>();
  // A causal forward runs chunk by chunk, each chunk a chain from the previous one's end.
  for (int i = 0; i < plan.T; ++i) p[i] = causal_ ? i - 1 : plan.parents[i];
}

GdnState::ChunkIo GdnState::chunk(int slot0, int t, const GdnRows& shared) {
  const int c0 = slot0 - length_;
  if (!causal_ && (c0 != 0 || t != T_))
    fail("forward", "a tree over recurrent (gdn) layers must fit in one chunk: " + std::to_string(T_) +
                        " rows, chunk of " + std::to_string(t));
  ChunkIo io;
  if (keep_) {  // every row of the forward, at its own index
    io.rows = {rows(u_, c0, t), rows(qkv_, c0, t), rows(a_, c0, t), rows(b_, c0, t)};
  } else {
    io.rows = shared;
  }
  io.parents = head(parents_, t);
  if (in_place_) {  // the conv reads the window before its state update rewrites it (Gdn::recur)
    io.conv_in = io.conv_out = conv_c_, io.state_in = io.state_out = state_c_;
    return io;
  }
  const bool first = c0 == 0;
  io.conv_in = (causal_ && !first) ? conv_w_ : conv_c_;
  io.state_in = (causal_ && !first) ? state_w_ : state_c_;
  if (causal_) io.conv_out = conv_w_, io.state_out = state_w_;
  return io;
}

void GdnState::commit(Encoder& enc, const CommitPlan& plan) {
  const int m = int(plan.nodes->size());
  if (m == 0) return;
  if (causal_ && plan.identity && m == T_) {
    // Every row of a causal forward: its working pair is the new committed state (in place: already is).
    if (!in_place_) std::swap(conv_c_, conv_w_), std::swap(state_c_, state_w_);
    if (m > 1 && checkpoints_) {
      // A prefill: keep its end as the checkpoint. Host copies are safe here: the forward's encoder has
      // completed and this path records nothing.
      if (!conv_k_.defined()) conv_k_ = zeros(conv_c_.shape), state_k_ = zeros(state_c_.shape);
      std::memcpy(conv_k_.data<float>(), conv_c_.data<float>(), conv_c_.nbytes());
      std::memcpy(state_k_.data<float>(), state_c_.data<float>(), state_c_.nbytes());
      kept_ = plan.length + m;
    }
    return;
  }
  if (!keep_)
    fail("commit", "a recurrent (gdn) layer keeps the update inputs of trees and of causal forwards of up to " +
                       std::to_string(kKeepRows) + " rows: commit all " + std::to_string(T_) + " rows");
  // Replay the accepted path from the committed state with the forward's kernel.
  Tensor nodes = Tensor::empty(DType::I32, {m}), chain = Tensor::empty(DType::I32, {m});
  for (int j = 0; j < m; ++j) nodes.data<int32_t>()[j] = (*plan.nodes)[j], chain.data<int32_t>()[j] = j - 1;
  const int N = T_;
  ops::gdn_conv_state(enc, conv_c_, rows(u_, 0, N), nodes, conv_c_);
  // The replay's output is not needed: it goes where the conv inputs were, read just above (the encoder
  // orders the two), so no buffer is kept for it (m x Hv*Dv fit in u's m x C floats).
  ops::gdn_core(enc, d_, rows(qkv_, 0, N), rows(a_, 0, N), rows(b_, 0, N), A_, dt_bias_, nodes, chain, state_c_,
                state_c_, rows(u_, 0, m, {int64_t(d_.hv) * d_.dv}));
}

void GdnState::truncate(int length, int n) {
  if (n == length) return;
  if (n == 0) return reset();
  if (n != kept_) {
    const bool cp = kept_ > 0 && kept_ != length;
    fail("truncate", "a model with recurrent (gdn) layers keeps no per-token history: truncate to 0" +
                         std::string(cp ? ", " : " or ") + "to the length " + std::to_string(length) +
                         (cp ? " or to the end of the last prefill " + std::to_string(kept_) : "") + ", not " +
                         std::to_string(n) + " (Transformer.truncatable gives the longest allowed)");
  }
  std::memcpy(conv_c_.data<float>(), conv_k_.data<float>(), conv_c_.nbytes());
  std::memcpy(state_c_.data<float>(), state_k_.data<float>(), state_c_.nbytes());
}

void GdnState::keep_prefill_checkpoints(bool on) {
  checkpoints_ = on;
  if (!on) conv_k_ = Tensor{}, state_k_ = Tensor{}, kept_ = -1;  // its memory goes back
}

int GdnState::truncatable(int length, int n) const {
  if (n >= length) return length;
  return kept_ > 0 && kept_ <= n ? kept_ : 0;
}

void GdnState::reset() {
  std::memset(conv_c_.data<float>(), 0, conv_c_.nbytes());
  std::memset(state_c_.data<float>(), 0, state_c_.nbytes());
  kept_ = -1;
}

size_t GdnState::bytes(int) const { return conv_c_.nbytes() + state_c_.nbytes(); }

size_t GdnState::held_bytes() const {
  size_t n = 0;
  for (const Tensor* t : {&conv_c_, &state_c_, &conv_w_, &state_w_, &conv_k_, &state_k_, &u_, &qkv_, &a_, &b_,
                          &parents_})
    if (t->defined()) n += t->nbytes();
  return n;
}

}  // namespace eyas::model
