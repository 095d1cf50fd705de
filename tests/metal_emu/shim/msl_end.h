// Closes a lowered kernel TU: the keyword macros must not leak into the binding stubs.
#pragma once
#undef device
#undef thread
#undef threadgroup
#undef kernel
#undef constant
