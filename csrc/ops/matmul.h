#pragma once
#include "core/encoder.h"

namespace eyas::ops {

// y = x . w^T.  x: F32[T,K] (T >= 1); w: [N,K] of F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// Q4_K, Q5_K or Q6_K in GGUF block layout (read-only view is fine); y: F32[T,N], not aliasing x/w.
// On AVX-512/AMX CPUs the CPU backend repacks a Q4_0/Q4_1 weight once (as many bytes again as the
// weight) and stores the repack in the weight's Buffer, freed with it; weights are not to be rewritten
// in place after their first matmul (see csrc/cpu/weight_pack.cpp for the guard that exists).
void matmul(Encoder& enc, const Tensor& x, const Tensor& w, const Tensor& y);

// True for the weight types matmul and embedding accept.
bool matmul_supports(DType t);

}  // namespace eyas::ops
