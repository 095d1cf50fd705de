// eyas._core: the compiled half of eyas. Submodules are filled by self-registering binding
// files (registry.h); this file only creates the module.
#include "bindings/registry.h"

namespace eyas::bind {
void run_registrars(nanobind::module_& m);
}

NB_MODULE(_core, m) {
  m.doc() = "eyas C++ core: devices, encoders, kernels, transformer runtime and speculation";
  eyas::bind::run_registrars(m);
}
