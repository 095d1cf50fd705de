// CPU kernel entry points. Arguments are validated by the ops layer (csrc/ops) before a
// kernel runs; kernels trust their inputs. Every kernel splits work by output rows/columns
// only, never inside a reduction (DESIGN §3.1).
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// x, y: [rows, dim]; w: [dim]
void rms_norm(const RmsNormArgs& a, const float* x, const float* w, float* y, ThreadPool& pool);

}  // namespace eyas::cpu
