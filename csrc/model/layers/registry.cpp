#include "model/layers/registry.h"

#include "model/layers/attention.h"
#include "model/layers/dense_ffn.h"
#include "model/layers/gdn.h"
#include "model/layers/moe_ffn.h"

namespace eyas::model {

// An explicit table, not self-registration: eyas_core is a static library, whose unreferenced
// objects (and their static registrars) the linker would drop.
static const LayerKind kKinds[] = {
    {"attention", Role::Mixer, &build_attention},
    {"gdn", Role::Mixer, &build_gdn},
    {"dense_ffn", Role::Ffn, &build_dense_ffn},
    {"moe_ffn", Role::Ffn, &build_moe_ffn},
};

const LayerKind& find_layer_kind(std::string_view name) {
  std::string known;
  for (const LayerKind& k : kKinds) {
    if (name == k.name) return k;
    known += (known.empty() ? "" : ", ") + std::string(k.name);
  }
  fail("Transformer", "unknown layer kind '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace eyas::model
