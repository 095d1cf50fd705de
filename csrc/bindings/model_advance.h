// Transformer.advance: a speculative round's verify, accept and commit (or a plain step) in one call.
#pragma once
#include <optional>

#include "bindings/registry.h"
#include "model/transformer.h"
#include "speculative/rng.h"

namespace eyas::bind {

// tokens / parents: a draft tree (parents[0] = -1, every other parent an earlier node), or one root alone
// (a plain step). Returns {'path', 'tokens'} as speculative.accept gives them for this forward's rows, and
// with capture_aux the path's rows of the captured features ('aux', F32[m, A*H]); with top, a one-node
// tree's 'top' (sample_with_top's largest probability; 1 greedy).
nb::dict advance(model::Transformer& m, nb::handle tokens, nb::handle parents, float temperature, int32_t top_k,
                 float top_p, std::optional<speculative::Rng*> rng, bool capture_aux, bool top);

}  // namespace eyas::bind
