// Element and weight types. Quantized ids equal GGML's (GGUF tensor_type), so a GGUF
// tensor's type passes through unchanged.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace eyas {

enum class DType : int32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8,
  Q4_K = 12, Q5_K = 13, Q6_K = 14, I8 = 24, I16 = 25, I32 = 26, I64 = 27, BF16 = 30,
  U8 = 1000,  // eyas-only: masks and bool tensors
};

struct TypeTraits {
  const char* name;
  int32_t block_elems;  // elements per block (1 for plain types)
  int32_t block_bytes;  // bytes per block
};

// Throws std::invalid_argument for an unknown id.
const TypeTraits& type_traits(DType t);
DType dtype_from_int(int32_t id);
bool is_quantized(DType t);
// Bytes of a row of `n` elements; throws if n is not a multiple of the block size.
size_t row_bytes(DType t, int64_t n);

}  // namespace eyas
