// The target model: a decoder-only Transformer assembled from the model description as a list of
// layers, each of a kind (layers/registry.h: attention, dense FFN, MoE FFN) with its own
// per-sequence LayerState (the attention kind's is its KV cache). forward() runs T new tokens
// after the committed prefix, either causally (prefill / decode) or as a draft tree; commit()
// hands every state the accepted path. See docs/model_spec.md for the contract with the loaders.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/encoder.h"
#include "model/layer.h"
#include "model/spec.h"

namespace eyas::model {

// Argmax: the last row's greedy token (first index of the maximum, NaN ignored, as speculative::accept
// picks it) without handing the logits back: plain greedy decoding needs nothing else. ArgmaxAll: every
// row's, which is all a greedy verify needs (the logits of T rows of a large vocabulary stay inside).
enum class LogitsMode { Last, All, None, Argmax, ArgmaxAll };

struct ForwardResult {
  Tensor logits;       // F32[T or 1, V]; undefined for LogitsMode::None and Argmax
  Tensor aux;          // F32[T, len(aux_layers) * H] when aux capture was asked for
  int32_t argmax = -1;  // LogitsMode::Argmax
  Tensor argmaxes;      // I32[T]: LogitsMode::ArgmaxAll
};

// A tree is given either by its visibility mask or by its node parents (not both); neither = causal.
struct ForwardInput {
  const int32_t* tokens = nullptr;   // [T]
  int T = 0;
  const uint8_t* mask = nullptr;     // [T, T] row-major: mask[i, j] = node j is i or an ancestor of i
  const int32_t* parents = nullptr;  // [T]: parents[i] in [-1, i) (-1: a root on the committed prefix)
  const int32_t* depths = nullptr;   // [T], checked against the tree; positions are length + depths[i]
  LogitsMode logits = LogitsMode::Last;
  bool capture_aux = false;
  // Causal only: commit every row as the forward ends (forward + commit(0..T-1) in one call). A
  // recurrent layer then updates its state in place, with no working copy (docs/model_spec.md).
  bool commit_all = false;
};

class Transformer {
 public:
  // chunk: rows per prefill step; results do not depend on it (batch-invariant kernels).
  // fuse: concatenate q/k/v and gate/up weights of one type into one matmul each (fewer
  // dispatches per token; same bits, since every output column is its own dot product).
  // kv_dtype: F32, or F16 (the KV cache in half precision: half the bytes per token of context).
  Transformer(ModelSpec spec, WeightMap weights, int max_context, std::vector<int> aux_layers,
              std::shared_ptr<Device> device, int chunk = 256, bool fuse = true, DType kv_dtype = DType::F32);

  // With in.commit_all the rows are committed before the result returns (also when the logits turn out
  // NaN, which fails after the commit). Should a forward that updates a state in place fail part way
  // (not bad input: that is refused before anything runs), the sequence is reset to length 0.
  ForwardResult forward(const ForwardInput& in);
  // One forward over several sequences' new rows (continuous batching): seqs[i] runs ins[i] as its
  // own forward() would, with bit-identical results (every kernel is batch-invariant), but the
  // weights are read once for all rows. The layers and weights are this Transformer's; each seq
  // must have been built from the same weights (seqs may include this one, none twice), and each
  // commits its own rows afterwards. All rows together must fit one chunk.
  std::vector<ForwardResult> forward_batch(const std::vector<Transformer*>& seqs, const std::vector<ForwardInput>& ins);
  // nodes: indices into the last forward's rows (strictly increasing); keeps them at length..length+m.
  void commit(const std::vector<int32_t>& nodes);
  void truncate(int n);
  // The longest length <= n (clamped to [0, length]) that truncate accepts: n unless a layer keeps no
  // per-token history (gdn: the length, the end of the last prefill, or 0).
  int truncatable(int n) const;
  void reset();
  // Recurrent layers keep a copy of their state at the end of each prefill, so that truncate can return
  // there (prompt caching: the server turns this on); off by default, the copy's memory is not held.
  void set_prefill_checkpoints(bool on);
  bool prefill_checkpoints() const { return prefill_checkpoints_; }

  int length() const { return length_; }
  int capacity() const { return capacity_; }
  DType kv_dtype() const { return kv_dtype_; }
  // Rows written after `length` by the last forward, which commit() may keep.
  int pending() const { return pending_; }
  // Bytes a snapshot of every layer's state holds at the committed length.
  size_t state_bytes() const;
  // Bytes every layer's state has allocated now (LayerState::held_bytes).
  size_t held_state_bytes() const;
  // Bytes of every weight a decode step reads whole: all given weights but the token embedding,
  // which a step reads one row of, unless it is also the output head (MoE experts all counted).
  size_t weight_bytes() const { return weight_bytes_; }
  // Kind of every layer in order (two per block: mixer, FFN).
  std::vector<std::string> layer_kinds() const;
  // Layer `index`'s (in layer_kinds order) committed state as named views (LayerState::committed).
  std::vector<std::pair<std::string, Tensor>> layer_state(int index) const;
  const ModelSpec& spec() const { return spec_; }
  const std::vector<int>& aux_layers() const { return aux_layers_; }
  Device& device() { return *device_; }

 private:
  struct Slot {
    const char* kind;                   // registry name
    int block;                          // blk.{block}
    std::unique_ptr<Layer> layer;
    Workspace* ws;                      // shared by the layers of this kind
    std::unique_ptr<LayerState> state;  // null for stateless kinds
  };
  struct Scratch {
    int rows = 0;
    Tensor last_logits, last_argmax;  // LogitsMode::Argmax: F32[1, V], I32[1], reused every step
    Tensor row_logits;                // LogitsMode::ArgmaxAll: F32[rows, V], reused (grown) by every verify
    Tensor ids, pos, x, xn, proj;
  };

  void build(const WeightMap& w, bool fuse);
  void ensure_scratch(int rows);
  // forward()'s chunks, encoded and run (the lock held, the plan made and every state prepared).
  void run_chunks(const ForwardInput& in, ForwardResult& r);
  // forward_batch()'s one encoded pass over every sequence's rows (c: their segments); logits, argmax: the
  // head's rows for all of them, in order.
  void run_batch(const std::vector<Transformer*>& seqs, const std::vector<ForwardInput>& ins, Chunk& c, int total,
                 std::vector<ForwardResult>& out, Tensor& logits, Tensor& argmax);
  // Prepares every state for plan_ (pending_ cleared); whether any will update its committed rows in place.
  bool prepare_states_locked();
  void commit_locked(const std::vector<int32_t>& nodes);
  void commit_all_locked();  // every pending row, in place
  void reset_locked();
  // Fills plan_ (positions, parents) and mask_ from the input after checking it.
  void plan_forward(const ForwardInput& in);

  ModelSpec spec_;
  std::shared_ptr<Device> device_;
  std::vector<int> aux_layers_;
  int chunk_, capacity_;
  DType kv_dtype_;
  int length_ = 0, pending_ = 0;
  bool prefill_checkpoints_ = false;
  size_t weight_bytes_ = 0;
  Tensor embd_, out_norm_, out_w_;
  std::vector<std::unique_ptr<Workspace>> workspaces_;
  std::vector<Slot> layers_;
  ForwardPlan plan_;                 // reused by every forward: its vectors keep their capacity
  const uint8_t* mask_ = nullptr;    // the current forward's tree mask [T, T], or null
  std::vector<uint8_t> parent_mask_;  // the mask built from ForwardInput::parents
  std::vector<int32_t> all_rows_;     // 0..T-1: a commit_all forward's commit
  Scratch s_;
  Encoder enc_;  // reused by every forward/commit: its arrays keep their capacity between steps
  std::mutex mutex_;  // forward/commit run without the GIL; one call at a time
};

}  // namespace eyas::model
