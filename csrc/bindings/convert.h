// numpy <-> Tensor conversion (zero-copy in both directions) and the process-wide default device.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/optional.h>

#include <optional>

#include "core/encoder.h"
#include "core/tensor.h"

namespace eyas::bind {

namespace nb = nanobind;
// Read-only arrays (memory-mapped weights) are accepted; writes to them are refused by the encoder.
using Array = nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu, nb::ro>;

// View a C-contiguous numpy array as a Tensor; dtype follows the array (float32 -> F32, ...).
Tensor from_numpy(const char* op, const char* name, Array a);
// View raw bytes (uint8 array) as a tensor of `dtype` with logical `shape` (quantized weights).
Tensor from_bytes(const char* op, const char* name, Array a, DType dtype, std::vector<int64_t> shape);
// numpy view of a Tensor that keeps its buffer alive. Quantized tensors come back as uint8 rows.
nb::object to_numpy(const Tensor& t);

std::shared_ptr<Device> default_device();
void set_default_device(std::shared_ptr<Device> device);
void reset_default_device();
void set_default_threads(int threads);

// Runs `record(enc)` on the caller's encoder if given, else on a fresh one committed at once.
template <typename F>
void encode(std::optional<Encoder*> encoder, F&& record) {
  if (encoder && *encoder) {
    record(**encoder);
    return;
  }
  auto dev = default_device();
  Encoder enc(*dev);
  record(enc);
  nb::gil_scoped_release release;
  enc.commit();
}

}  // namespace eyas::bind
