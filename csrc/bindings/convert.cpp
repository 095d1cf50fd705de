#include "bindings/convert.h"

#include <memory>
#include <algorithm>
#include <mutex>

#include "bindings/registry.h"

namespace eyas::bind {

static std::vector<std::pair<std::string, BindFn>>& registry() {
  static std::vector<std::pair<std::string, BindFn>> r;
  return r;
}

Registrar::Registrar(const char* name, BindFn fn) { registry().emplace_back(name, fn); }

void run_registrars(nb::module_& m) {
  auto r = registry();
  std::sort(r.begin(), r.end());  // stable stub order whatever the link order
  for (auto& [name, fn] : r) fn(m);
}

static DType dtype_of(const char* op, const char* name, const Array& a) {
  auto dt = a.dtype();
  if (dt == nb::dtype<float>()) return DType::F32;
  if (dt == nb::dtype<int32_t>()) return DType::I32;
  if (dt == nb::dtype<int64_t>()) return DType::I64;
  if (dt == nb::dtype<uint8_t>() || dt == nb::dtype<bool>()) return DType::U8;
  if (dt == nb::dtype<int8_t>()) return DType::I8;
  if (dt == nb::dtype<int16_t>()) return DType::I16;
  if (dt.code == uint8_t(nb::dlpack::dtype_code::Float) && dt.bits == 16) return DType::F16;
  if (dt.code == uint8_t(nb::dlpack::dtype_code::UInt) && dt.bits == 16) return DType::BF16;  // bf16 as raw uint16
  fail(op, std::string(name) + ": unsupported numpy dtype");
}

static std::shared_ptr<void> keep_alive(nb::handle owner) {
  // The deleter may run on a thread that released the GIL; take it before dropping the ref.
  owner.inc_ref();
  return std::shared_ptr<void>(owner.ptr(), [](void* p) {
    nb::gil_scoped_acquire gil;
    nb::handle(static_cast<PyObject*>(p)).dec_ref();
  });
}

Tensor from_numpy(const char* op, const char* name, Array a) {
  Tensor t;
  t.dtype = dtype_of(op, name, a);
  for (size_t i = 0; i < a.ndim(); ++i) t.shape.push_back(int64_t(a.shape(i)));
  nb::object owner = nb::find(a);
  bool read_only = false;
  if (owner.is_valid() && nb::hasattr(owner, "flags")) read_only = !nb::cast<bool>(owner.attr("flags").attr("writeable"));
  t.buffer = Buffer::wrap(const_cast<void*>(static_cast<const void*>(a.data())), a.nbytes(), owner.is_valid() ? keep_alive(owner) : nullptr, read_only);
  return t;
}

Tensor from_bytes(const char* op, const char* name, Array a, DType dtype, std::vector<int64_t> shape) {
  Tensor t = from_numpy(op, name, a);
  if (t.dtype != DType::U8) fail(op, std::string(name) + ": raw weight bytes must be a uint8 array");
  t.dtype = dtype;
  t.shape = std::move(shape);
  if (t.shape.empty()) fail(op, std::string(name) + ": shape must not be empty");
  size_t want = t.nbytes();
  if (want != t.buffer->size())
    fail(op, std::string(name) + ": " + t.describe() + " needs " + std::to_string(want) + " bytes, got " +
                 std::to_string(t.buffer->size()));
  return t;
}

nb::object to_numpy(const Tensor& t) {
  auto* holder = new std::shared_ptr<Buffer>(t.buffer);
  nb::capsule owner(holder, [](void* p) noexcept { delete static_cast<std::shared_ptr<Buffer>*>(p); });
  std::vector<size_t> shape;
  nb::dlpack::dtype dt;
  switch (t.dtype) {
    case DType::F32: dt = nb::dtype<float>(); break;
    case DType::I32: dt = nb::dtype<int32_t>(); break;
    case DType::I64: dt = nb::dtype<int64_t>(); break;
    case DType::I8: dt = nb::dtype<int8_t>(); break;
    case DType::I16: dt = nb::dtype<int16_t>(); break;
    case DType::F16: dt = {uint8_t(nb::dlpack::dtype_code::Float), 16, 1}; break;
    case DType::BF16: dt = nb::dtype<uint16_t>(); break;
    default: dt = nb::dtype<uint8_t>(); break;
  }
  if (is_quantized(t.dtype)) {
    shape = {size_t(t.rows()), row_bytes(t.dtype, t.shape.back())};
  } else {
    for (int64_t d : t.shape) shape.push_back(size_t(d));
  }
  nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu> arr(t.data<void>(), shape.size(), shape.data(), owner, nullptr, dt);
  return nb::cast(arr);
}

static std::shared_ptr<Device>& device_slot() {
  static std::shared_ptr<Device> d;
  return d;
}

std::shared_ptr<Device> default_device() {
  auto& d = device_slot();
  if (!d) d = std::make_shared<Device>("cpu", 0);
  return d;
}

void set_default_threads(int threads) { device_slot() = std::make_shared<Device>("cpu", threads); }

void reset_default_device() { device_slot().reset(); }

void set_default_device(std::shared_ptr<Device> device) {
  if (!device) fail("set_default_device", "device must be a Device");
  device_slot() = std::move(device);
}

}  // namespace eyas::bind
