// What every drafter family that runs in the engine shares (EAGLE-3, MTP): a KV cache of committed
// (feature, token) pairs [0, length) with scratch tree slots after them, the root a tree grows from
// (the last ingested pair's output row, logits and token), checked ingest in chunks, rollback, and one
// call at a time. A family brings its weights and its forward.
#pragma once
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/encoder.h"
#include "speculative/expand_levels.h"
#include "speculative/tree.h"

namespace eyas::speculative {

class RuntimeDrafter {
 public:
  void truncate(int n);
  void reset() { truncate(0); }
  int length() const { return length_; }
  int capacity() const { return max_context_; }
  // The output row (the next depth's input feature) and logits of the last ingested pair (for tests).
  const std::vector<float>& last_hidden() const { return root_h_; }
  const std::vector<float>& last_logits() const { return root_logits_; }

 protected:
  // op: the family's name in error messages ("[op] ...").
  RuntimeDrafter(const char* op, int max_context, std::shared_ptr<Device> device);
  ~RuntimeDrafter() = default;

  // An ingest's checks: features F32[T, width] (called `name`), tokens I32[T] within [0, vocab), room
  // for T more pairs. Returns T.
  int check_pairs(const Tensor& features, const char* name, int64_t width, const Tensor& tokens, int vocab) const;

  // Runs T pairs in chunks of at most chunk_rows: each chunk's tokens go to ids and its positions
  // (pair position = feature position) to pos, then forward(enc, c0, C) records its rows at slots
  // [length, length + C) and the chunk is committed. Returns the last chunk's row count.
  template <typename Forward>
  int run_chunks(const int32_t* tokens, int T, int chunk_rows, const Tensor& ids, const Tensor& pos, Forward forward) {
    int C = 0;
    for (int c0 = 0; c0 < T; c0 += chunk_rows) {
      C = std::min(chunk_rows, T - c0);
      std::memcpy(ids.data<int32_t>(), tokens + c0, size_t(C) * sizeof(int32_t));
      for (int i = 0; i < C; ++i) pos.data<int32_t>()[i] = length_ + i;
      Encoder enc(*device_);
      forward(enc, c0, C);
      enc.commit();
      length_ += C;
    }
    return C;
  }

  // After an ingest: h [H] is the last pair's output row, logits [V] its logits.
  void set_root(const float* h, int64_t H, const float* logits, int64_t V, int32_t token);

  // Before a tree (and its scratch): fails unless a pair was ingested and `levels` levels of top_k
  // rows fit the tree slots.
  void check_tree(const TreePolicy& policy, int levels, int tree_slots) const;

  // A tree from the root (b not started yet, check_tree passed): the first frontier's input rows
  // (`in`, F32[rows, H]) get the root's output; forward(enc, F, mask, slot0) records the F frontier
  // rows at slot0 after the committed pairs.
  // committed(F), when given, runs on the host after each level's forward has committed, before its
  // logits are read.
  template <typename Forward, typename Committed = void (*)(int)>
  DraftTree grow_tree(TreeBuilder& b, int64_t H, const Tensor& ids, const Tensor& pos, const Tensor& in, const Tensor& out,
                      const Tensor& logits, Forward forward, Committed committed = [](int) {}) {
    b.start(root_token_, root_logits_.data());
    const int F0 = int(b.frontier_tokens().size());
    for (int j = 0; j < F0; ++j) std::memcpy(in.data<float>() + j * H, root_h_.data(), size_t(H) * sizeof(float));
    return expand_levels(b, length_, H, ids, pos, in, out, logits, [&](int F, const Tensor& mask) {
      Encoder enc(*device_);
      forward(enc, F, mask, length_ + b.slots_run());
      enc.commit();
      committed(F);
    });
  }

  const char* op_;
  std::shared_ptr<Device> device_;
  int max_context_;
  int length_ = 0;
  std::mutex mutex_;  // calls run without the GIL; one at a time

 private:
  int32_t root_token_ = -1;
  std::vector<float> root_h_, root_logits_;
};

}  // namespace eyas::speculative
