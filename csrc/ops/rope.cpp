#include "ops/rope.h"

namespace eyas::ops {
void rope(Encoder&, const Tensor&, const Tensor&, const Tensor&, int, RopeStyle, const Tensor&) { fail("rope", "not implemented"); }
}  // namespace eyas::ops
