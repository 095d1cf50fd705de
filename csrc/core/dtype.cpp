#include "core/dtype.h"

#include <stdexcept>

namespace eyas {

const TypeTraits& type_traits(DType t) {
  const TypeTraits* tr = find_traits(t);
  if (!tr) throw std::invalid_argument("[dtype] unknown type id " + std::to_string(int(t)));
  return *tr;
}

DType dtype_from_int(int32_t id) {
  DType t = static_cast<DType>(id);
  if (!find_traits(t)) throw std::invalid_argument("[dtype] unsupported type id " + std::to_string(id));
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
