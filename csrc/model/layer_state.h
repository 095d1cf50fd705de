// LayerState: one layer's per-sequence state behind one interface, so the Transformer drives any
// mix of layer kinds the same way: the attention kind's is its KV cache; a recurrent kind's would
// be its running state (reference/qwen35_hybrid.md §5); stateless kinds (FFNs) have none.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/encoder.h"

namespace eyas::model {

// One forward as the states see it: T new rows after `length` committed ones. Row i continues
// the sequence of row parents[i] (-1: the committed state), so a recurrent kind derives a tree
// node's state from its parent's; causal forwards (prefill, decode) have parents[i] = i - 1.
struct ForwardPlan {
  int length = 0;
  int T = 0;
  bool causal = true;
  // Causal only: every row is committed as the forward ends (plain prefill and decode), so a recurrent
  // kind may update its committed state in place instead of into a working copy.
  bool commit_all = false;
  std::vector<int32_t> positions;  // [T]: length + depth (rope positions)
  std::vector<int32_t> parents;    // [T]: < i, or -1
};

// The accepted path of the last forward: its rows nodes[j] (strictly increasing, root first)
// become committed rows length + j.
struct CommitPlan {
  int length = 0;
  const std::vector<int32_t>* nodes = nullptr;
  bool identity = true;  // nodes == 0..m-1: the rows are in place already
  Tensor src_slots;      // I32[m]: length + nodes[j], built once for every layer (undefined if identity)
};

class LayerState {
 public:
  virtual ~LayerState() = default;
  // Before the forward's layers run; may refuse a plan the state cannot hold.
  virtual void prepare(const ForwardPlan& plan) = 0;
  // Whether the prepared forward writes the committed state itself (ForwardPlan::commit_all): if it
  // fails part way, that state is lost and the Transformer resets the sequence.
  virtual bool updates_committed() const { return false; }
  // Keeps the accepted path; any data movement is recorded on enc.
  virtual void commit(Encoder& enc, const CommitPlan& plan) = 0;
  // Forgets committed rows [n, length); a kind that keeps no history may refuse lengths other than
  // those truncatable() gives.
  virtual void truncate(int length, int n) = 0;
  // The longest length <= n that truncate(length, .) accepts: n for a kind that can drop any suffix.
  virtual int truncatable(int length, int n) const { return n; }
  // Whether a kind that keeps no per-token history keeps a copy of its state at the end of each prefill
  // so truncate can return there (prompt caching); off, it holds no such copy.
  virtual void keep_prefill_checkpoints(bool) {}
  virtual void reset() = 0;
  // Bytes a snapshot of this state holds after `length` committed rows.
  virtual size_t bytes(int length) const = 0;
  // Bytes this state has allocated now (buffers for the whole capacity, working copies, checkpoints).
  virtual size_t held_bytes() const = 0;
  // Whether its layer can run this sequence's rows beside other sequences' in one forward
  // (Layer::encode_segments); a kind that cannot is refused up front by Transformer::forward_batch.
  virtual bool batchable() const { return false; }
  // The committed state as named views, for tests against other implementations; a kind whose state
  // grows with the length (the K/V cache) lists none.
  virtual std::vector<std::pair<std::string, Tensor>> committed() const { return {}; }
};

}  // namespace eyas::model
