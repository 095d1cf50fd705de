// Layer: one kind of sub-layer of a decoder block (attention, dense FFN, MoE FFN, ...), built from
// the model description and its weights; layers/registry.h maps kind names to builders.
// Each layer updates the residual stream in place: x += f(norm(x)).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/encoder.h"
#include "model/layer_state.h"
#include "model/spec.h"

namespace eyas::model {

// The rows of one sequence inside a chunk that holds several (Transformer::forward_batch).
struct Segment {
  int row0 = 0, t = 0;  // rows [row0, row0 + t) of the chunk
  int slot0 = 0;        // sequence slot of its first row
  int prefix = 0;       // committed slots its rows see
  Tensor mask;          // U8[t, t]: tree visibility among its rows; undefined = causal
};

// One chunk of a forward as every layer sees it (views built once per chunk, not per layer:
// building them per layer was a measurable share of a decode step's host time).
struct Chunk {
  int t = 0;       // rows
  int slot0 = 0;   // sequence slot of row 0 (length + first row of the chunk)
  int prefix = 0;  // committed slots every row sees (tree: length; causal: slot0)
  Tensor x;        // F32[t, H]: the residual stream
  Tensor xn, proj; // F32[t, H]: normed input and block output, scratch shared by all kinds
  Tensor pos;      // I32[t]: rope positions
  Tensor mask;     // U8[t, c1]: tree visibility over the forward's rows 0..c1; undefined = causal
  std::vector<Segment> segments;  // several sequences' rows (then slot0, prefix, mask are unused)
};

// What the layers of one kind share in a model: scratch rows reused by every such layer, and
// constants such as the rope table. The first layer of a kind makes it; each layer joins it.
class Workspace {
 public:
  virtual ~Workspace() = default;
  // Buffers for up to `rows` rows (grows, never shrinks).
  virtual void reserve(int rows) = 0;
  // Views of the first t rows for one chunk; for t == 1 fused outputs are split as views here.
  virtual void bind(Encoder& enc, int t) = 0;
};

struct LayerInit {
  const ModelSpec& spec;
  int block;                // weights are blk.{block}.*
  const WeightMap& weights;
  bool fuse;                // one matmul over stacked weights of one type (same bits)
};

struct StateInit {
  int capacity;             // max_context
  DType kv_dtype;           // F32 or F16
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::unique_ptr<Workspace> make_workspace() const = 0;
  // Tells the shared workspace what this layer needs (e.g. a fused output buffer).
  virtual void join(Workspace& ws) const {}
  // This layer's per-sequence state, or null for a stateless kind.
  virtual std::unique_ptr<LayerState> make_state(const StateInit& init) const { return nullptr; }
  // Records the layer on the chunk's rows; ws is this kind's workspace, state this layer's.
  virtual void encode(Encoder& enc, const Chunk& c, Workspace& ws, LayerState* state) const = 0;
  // The same over c.segments, states[i] being segment i's state of this layer. Stateless kinds run
  // every row at once (rows are independent); a stateful kind must override it or refuses.
  virtual void encode_segments(Encoder& enc, const Chunk& c, Workspace& ws, const std::vector<LayerState*>& states) const;
};

}  // namespace eyas::model
