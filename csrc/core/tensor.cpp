#include "core/tensor.h"

#include <stdexcept>

namespace eyas {

Tensor Tensor::empty(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  for (int64_t d : t.shape)
    if (d < 0) throw std::invalid_argument("[Tensor] negative dimension in " + t.describe());
  t.buffer = Buffer::allocate(t.nbytes());
  return t;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t Tensor::rows() const {
  int64_t n = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) n *= shape[i];
  return n;
}

size_t Tensor::nbytes() const {
  if (shape.empty()) return type_traits(dtype).block_bytes;
  return size_t(rows()) * row_bytes(dtype, shape.back());
}

// Plain string building, no iostreams: in a Python 3.12 process (GCC 13 build, numpy 2.5) an
// ostringstream here crashed on a null locale facet, so every error message naming a tensor did.
std::string Tensor::describe() const {
  std::string s = std::string(type_traits(dtype).name) + "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const uint8_t* Tensor::row_ptr(int64_t r) const {
  return data<uint8_t>() + size_t(r) * row_bytes(dtype, shape.back());
}

void fail(const char* op, const std::string& msg) { throw std::invalid_argument(std::string("[") + op + "] " + msg); }

void check_dtype(const char* op, const char* name, const Tensor& t, DType want) {
  if (!t.defined()) fail(op, std::string(name) + " is missing");
  if (t.dtype != want)
    fail(op, std::string(name) + " must be " + type_traits(want).name + ", got " + t.describe());
}

void check_ndim(const char* op, const char* name, const Tensor& t, int ndim) {
  if (t.ndim() != ndim)
    fail(op, std::string(name) + " must have " + std::to_string(ndim) + " dims, got " + t.describe());
}

void check_dim(const char* op, const char* name, const Tensor& t, int axis, int64_t want) {
  if (t.dim(axis) != want)
    fail(op, std::string(name) + " dim " + std::to_string(axis) + " must be " + std::to_string(want) + ", got " +
                 t.describe());
}

bool overlaps(const Tensor& a, const Tensor& b) {
  const char* pa = a.data<char>();
  const char* pb = b.data<char>();
  return pa < pb + b.nbytes() && pb < pa + a.nbytes();
}

void check_writable(const char* op, const char* name, const Tensor& t) {
  if (t.buffer && t.buffer->read_only()) fail(op, std::string(name) + " is read-only");
}

}  // namespace eyas
