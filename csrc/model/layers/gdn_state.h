// The gdn kind's LayerState (reference/qwen35_hybrid.md §5, scheme (b)): the committed conv window
// and recurrent state, a working pair that a causal forward runs into (commit of every row swaps
// it in), and the per-row update inputs of the last forward, from which commit replays any
// accepted path with the same kernel: committed bits equal plain decoding's whatever the tree.
// A forward committed whole as it ends (ForwardPlan::commit_all: plain prefill and decode) runs
// in the committed state itself, so the working pair is allocated only once a forward needs it.
#pragma once
#include <vector>

#include "model/layer_state.h"
#include "ops/backend.h"

namespace eyas::model {

// One chunk's rows of the update inputs: conv input u F32[t, C], conv output qkv F32[t, C], the raw
// alpha and beta projections a, b F32[t, Hv].
struct GdnRows {
  Tensor u, qkv, a, b;
};

class GdnState : public LayerState {
 public:
  // A forward keeps its rows' update inputs (for the replay of a partial commit) when it is a tree or
  // has at most this many rows; a longer causal forward (a prefill) runs in the layer's shared scratch
  // and can only be committed whole. Bounds the state's row buffers to what trees need.
  static constexpr int kKeepRows = 64;

  // A, dt_bias: the layer's F32[Hv] gate weights, which the replay reads.
  GdnState(const ops::GdnDims& d, int conv_kernel, Tensor A, Tensor dt_bias);

  void prepare(const ForwardPlan& plan) override;
  bool updates_committed() const override { return in_place_; }
  void commit(Encoder& enc, const CommitPlan& plan) override;
  // The state keeps no per-token history: truncate to the length, to 0 (a reset), or, with prefill
  // checkpoints on, to the length at the end of the last causal forward of more than one row (a prefill),
  // whose state is kept as a checkpoint so that a later prompt sharing that prefix (chat turns, prompt
  // caching) need not recompute it.
  void truncate(int length, int n) override;
  int truncatable(int length, int n) const override;
  void keep_prefill_checkpoints(bool on) override;
  void reset() override;
  // Each sequence's rows run from its own state and rows (Gdn::encode_segments).
  bool batchable() const override { return true; }
  size_t bytes(int length) const override;
  size_t held_bytes() const override;
  // "conv": F32[K-1, C] the last K-1 conv inputs, oldest first; "recurrent": F32[Hv, Dk, Dv] in the spec's head order.
  std::vector<std::pair<std::string, Tensor>> committed() const override {
    return {{"conv", conv_c_}, {"recurrent", state_c_}};
  }

  // What one chunk of the current forward reads and writes.
  struct ChunkIo {
    GdnRows rows;                    // the state's own rows c0.., or `shared` for a forward it does not keep
    Tensor parents;                  // I32[t]: within the chunk (-1: conv_in / state_in)
    Tensor conv_in, state_in;        // where the chunk's first rows continue from
    Tensor conv_out, state_out;      // causal: the working pair; tree: conv_out, state_out undefined
  };
  // The chunk of t rows starting at sequence slot slot0; fails for a tree that does not fit in one chunk.
  // shared: the layer's scratch rows for this chunk.
  ChunkIo chunk(int slot0, int t, const GdnRows& shared);

 private:
  void reserve(int rows);  // the state's own row buffers (grow, never shrink)

  ops::GdnDims d_;
  int K_;
  Tensor A_, dt_bias_;
  Tensor conv_c_, state_c_;  // committed: F32[K-1, C], F32[Hv, Dk, Dv]
  Tensor conv_w_, state_w_;  // after the last causal forward's rows; allocated at the first one not in place
  Tensor conv_k_, state_k_;  // the checkpoint: the committed state at length kept_ (-1: none)
  int kept_ = -1;
  bool checkpoints_ = false;
  int rows_ = 0;
  Tensor u_, qkv_, a_, b_, parents_;  // [rows_, ...]: the last forward's rows, when kept
  bool causal_ = true;
  int length_ = 0, T_ = 0;  // the last forward: committed length before it, its rows
  bool keep_ = false;       // the last forward's rows are in u_, qkv_, a_, b_
  bool in_place_ = false;   // the last forward runs in conv_c_, state_c_ (ForwardPlan::commit_all)
};

}  // namespace eyas::model
