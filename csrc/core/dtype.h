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

// The one table of type names and block sizes in C++ (GGML's values for GGML's ids).
// tests/test_type_tables.py holds it to the gguf package and to metal/common.h's block structs.
struct TypeRow {
  DType type;
  TypeTraits traits;
};
inline constexpr TypeRow kTypeTable[] = {
    {DType::F32, {"F32", 1, 4}},      {DType::F16, {"F16", 1, 2}},      {DType::BF16, {"BF16", 1, 2}},
    {DType::Q4_0, {"Q4_0", 32, 18}},  {DType::Q4_1, {"Q4_1", 32, 20}},  {DType::Q5_0, {"Q5_0", 32, 22}},
    {DType::Q5_1, {"Q5_1", 32, 24}},  {DType::Q8_0, {"Q8_0", 32, 34}},  {DType::Q4_K, {"Q4_K", 256, 144}},
    {DType::Q5_K, {"Q5_K", 256, 176}}, {DType::Q6_K, {"Q6_K", 256, 210}}, {DType::I8, {"I8", 1, 1}},
    {DType::I16, {"I16", 1, 2}},      {DType::I32, {"I32", 1, 4}},      {DType::I64, {"I64", 1, 8}},
    {DType::U8, {"U8", 1, 1}},
};

// nullptr for an id outside the table; usable in constant expressions.
constexpr const TypeTraits* find_traits(DType t) {
  for (const TypeRow& r : kTypeTable)
    if (r.type == t) return &r.traits;
  return nullptr;
}
// Block size of a known type, as a compile-time constant for the kernels' layouts.
constexpr int32_t block_bytes_of(DType t) { return find_traits(t)->block_bytes; }
constexpr int32_t block_elems_of(DType t) { return find_traits(t)->block_elems; }

// Throws std::invalid_argument for an unknown id.
const TypeTraits& type_traits(DType t);
DType dtype_from_int(int32_t id);
bool is_quantized(DType t);
// Bytes of a row of `n` elements; throws if n is not a multiple of the block size.
size_t row_bytes(DType t, int64_t n);

}  // namespace eyas
