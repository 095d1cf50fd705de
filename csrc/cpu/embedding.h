// CPU embedding: gather rows of a (possibly quantized) table and dequantize them to F32.
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// w: [V] rows of row_bytes(wtype, K); ids: I32[T] in [0, V); y: F32[T,K]. pack: the repack matmuls built of
// the same table (a tied head's), or null: rows it holds are read back from it (quant::gguf_row_from_pack),
// the same bytes, so the same floats, without touching the table's file pages.
void embedding(const EmbeddingArgs& a, const uint8_t* w, const int32_t* ids, float* y, ThreadPool& pool,
               const uint8_t* pack = nullptr);

// Dequantizes one row of `k` elements (GGUF block layout) into y, with the same float operations
// as the gguf package's numpy dequantizers.
void dequantize_row(int32_t wtype, const uint8_t* row, int64_t k, float* y);

}  // namespace eyas::cpu
