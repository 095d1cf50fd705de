// The default of Layer::encode_segments: stateless kinds treat a chunk of several sequences like
// any other chunk (each row is computed on its own); stateful kinds must split it themselves.
#include "model/layer.h"

#include <stdexcept>

namespace eyas::model {

void Layer::encode_segments(Encoder& enc, const Chunk& c, Workspace& ws, const std::vector<LayerState*>& states) const {
  if (states.size() == 1) return encode(enc, c, ws, states[0]);  // one sequence: the chunk's own fields hold it
  for (LayerState* s : states)
    if (s) throw std::invalid_argument("[forward_batch] a layer kind with per-sequence state that cannot run several "
                                       "sequences in one forward");
  encode(enc, c, ws, nullptr);
}

}  // namespace eyas::model
