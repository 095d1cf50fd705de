// Layer kinds by name. A block of the model description names a mixer kind and an FFN kind;
// adding a kind = its own files plus one line in registry.cpp.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "model/layer.h"

namespace eyas::model {

enum class Role { Mixer, Ffn };  // the slot a kind fills in a block: token mixing, then the FFN

struct LayerKind {
  const char* name;
  Role role;
  std::unique_ptr<Layer> (*build)(const LayerInit& init);
};

// Fails "[Transformer] unknown layer kind 'x'" (listing the known ones). A string_view, so callers
// passing a literal bind no temporary (GCC 13 took the returned table entry for a dangling one).
const LayerKind& find_layer_kind(std::string_view name);

}  // namespace eyas::model
