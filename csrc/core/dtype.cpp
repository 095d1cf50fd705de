#include "core/dtype.h"

#include <stdexcept>

namespace eyas {

static const TypeTraits* lookup(DType t) {
  static const TypeTraits f32{"F32", 1, 4}, f16{"F16", 1, 2}, bf16{"BF16", 1, 2},
      q4_0{"Q4_0", 32, 18}, q4_1{"Q4_1", 32, 20}, q5_0{"Q5_0", 32, 22}, q5_1{"Q5_1", 32, 24},
      q8_0{"Q8_0", 32, 34}, q4_k{"Q4_K", 256, 144}, q5_k{"Q5_K", 256, 176},
      q6_k{"Q6_K", 256, 210}, i8{"I8", 1, 1}, i16{"I16", 1, 2}, i32{"I32", 1, 4},
      i64{"I64", 1, 8}, u8{"U8", 1, 1};
  switch (t) {
    case DType::F32: return &f32;
    case DType::F16: return &f16;
    case DType::BF16: return &bf16;
    case DType::Q4_0: return &q4_0;
    case DType::Q4_1: return &q4_1;
    case DType::Q5_0: return &q5_0;
    case DType::Q5_1: return &q5_1;
    case DType::Q8_0: return &q8_0;
    case DType::Q4_K: return &q4_k;
    case DType::Q5_K: return &q5_k;
    case DType::Q6_K: return &q6_k;
    case DType::I8: return &i8;
    case DType::I16: return &i16;
    case DType::I32: return &i32;
    case DType::I64: return &i64;
    case DType::U8: return &u8;
  }
  return nullptr;
}

const TypeTraits& type_traits(DType t) {
  const TypeTraits* tr = lookup(t);
  if (!tr) throw std::invalid_argument("[dtype] unknown type id " + std::to_string(int(t)));
  return *tr;
}

DType dtype_from_int(int32_t id) {
  DType t = static_cast<DType>(id);
  if (!lookup(t)) throw std::invalid_argument("[dtype] unsupported type id " + std::to_string(id));
  return t;
}

bool is_quantized(DType t) { return type_traits(t).block_elems > 1; }

size_t row_bytes(DType t, int64_t n) {
  const TypeTraits& tr = type_traits(t);
  if (n < 0 || n % tr.block_elems != 0)
    throw std::invalid_argument(std::string("[dtype] row of ") + std::to_string(n) + " elements is not a multiple of the " +
                                tr.name + " block size " + std::to_string(tr.block_elems));
  return size_t(n / tr.block_elems) * size_t(tr.block_bytes);
}

}  // namespace eyas
