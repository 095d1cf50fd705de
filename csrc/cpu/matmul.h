// CPU quantized matmul: y[T,N] = x[T,K] . w[N,K]^T, w in GGUF block layout. Bits of each output
// row depend only on that row's inputs (not on T, the thread count or the ISA path).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// x: F32[T,K]; w: [N] rows of row_bytes(wtype, K); y: F32[T,N]. wpack: w repacked by
// matmul_pack_weight when matmul_wants_pack says so, else nullptr (then the call packs into
// scratch memory itself: same bits, slower).
void matmul(const MatmulArgs& a, const float* x, const uint8_t* w, float* y, ThreadPool& pool,
            const uint8_t* wpack = nullptr);

// Whether the current instruction set reads a repacked weight for this call, and its size.
bool matmul_wants_pack(const MatmulArgs& a);
size_t matmul_pack_bytes(const MatmulArgs& a);
// w: [N] GGUF rows as for matmul; out: matmul_pack_bytes(a) bytes.
void matmul_pack_weight(const MatmulArgs& a, const uint8_t* w, uint8_t* out, ThreadPool& pool);

// Name of the instruction set the kernels use now ("scalar", "avx2", "avx512", "amx").
const char* matmul_isa();

}  // namespace eyas::cpu
