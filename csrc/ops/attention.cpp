#include "ops/attention.h"

namespace eyas::ops {
void attention(Encoder&, const Tensor&, const Tensor&, const Tensor&, int, const Tensor&, float, const Tensor&) { fail("attention", "not implemented"); }
}  // namespace eyas::ops
