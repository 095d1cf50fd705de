// A Tensor is a typed, contiguous, row-major view into a Buffer. Kernels take Tensors so the
// encoder knows exactly which buffers each dispatch touches.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/dtype.h"

namespace eyas {

struct Tensor {
  BufferPtr buffer;
  size_t offset = 0;  // bytes from buffer start
  DType dtype = DType::F32;
  std::vector<int64_t> shape;

  static Tensor empty(DType dtype, std::vector<int64_t> shape);

  int ndim() const { return int(shape.size()); }
  int64_t dim(int i) const { return shape.at(i < 0 ? shape.size() + i : i); }
  int64_t numel() const;
  int64_t rows() const;  // product of all dims but the last
  size_t nbytes() const;
  bool defined() const { return buffer != nullptr; }
  std::string describe() const;  // "F32[3, 4]" for messages

  template <typename T>
  T* data() const { return reinterpret_cast<T*>(static_cast<char*>(buffer->data()) + offset); }
  // Row r of a 2-D view (last dim = row length, block layout aware for quantized types).
  const uint8_t* row_ptr(int64_t r) const;
};

// Whether a's and b's bytes share any address (by pointer: two buffers may wrap the same memory).
bool overlaps(const Tensor& a, const Tensor& b);

// Argument checks shared by every op; each throws std::invalid_argument prefixed "[op]".
void check_dtype(const char* op, const char* name, const Tensor& t, DType want);
void check_ndim(const char* op, const char* name, const Tensor& t, int ndim);
void check_dim(const char* op, const char* name, const Tensor& t, int axis, int64_t want);
void check_writable(const char* op, const char* name, const Tensor& t);
[[noreturn]] void fail(const char* op, const std::string& msg);

}  // namespace eyas
