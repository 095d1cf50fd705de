// CPU quantized matmul: y[T,N] = x[T,K] . w[N,K]^T, w in GGUF block layout. Bits of each output
// row depend only on that row's inputs (not on T, the thread count or the ISA path).
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// x: F32[T,K]; w: [N] rows of row_bytes(wtype, K); y: F32[T,N]
void matmul(const MatmulArgs& a, const float* x, const uint8_t* w, float* y, ThreadPool& pool);

// Name of the instruction set the kernels use now ("scalar", "avx2", "avx512", "amx").
const char* matmul_isa();

}  // namespace eyas::cpu
