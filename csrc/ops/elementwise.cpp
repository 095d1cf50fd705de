#include "ops/elementwise.h"

namespace eyas::ops {
void add(Encoder&, const Tensor&, const Tensor&, const Tensor&) { fail("add", "not implemented"); }
void silu_mul(Encoder&, const Tensor&, const Tensor&, const Tensor&) { fail("silu_mul", "not implemented"); }
void sigmoid_mul(Encoder&, const Tensor&, const Tensor&, const Tensor&) { fail("sigmoid_mul", "not implemented"); }
void scale(Encoder&, const Tensor&, float, const Tensor&) { fail("scale", "not implemented"); }
}  // namespace eyas::ops
