// Test hooks for the backend seam (csrc/ops/backend.h): devices of a kind this build may have no
// backend for, and an op run on buffers tagged as memory of a chosen device kind.
#include <cstring>

#include <nanobind/stl/array.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings/convert.h"
#include "bindings/registry.h"
#include "ops/matmul.h"
#include "ops/norm.h"

namespace {

// A copy of t's bytes in a new buffer that belongs to `kind`.
Tensor copy_on(const Tensor& t, DeviceKind kind) {
  Tensor c = t;
  c.offset = 0;
  c.buffer = Buffer::allocate(t.nbytes(), kind);
  std::memcpy(c.buffer->data(), t.data<uint8_t>(), t.nbytes());
  return c;
}

Tensor empty_on(std::vector<int64_t> shape, DeviceKind kind) {
  Tensor t;
  t.shape = std::move(shape);
  t.buffer = Buffer::allocate(t.nbytes(), kind);
  return t;
}

}  // namespace

EYAS_BINDINGS(ops_backend) {
  nb::module_ ops = bind::ops_module(m);
  ops.def(
      "_device",
      [](const std::string& kind, int threads) { return new Device(device_kind_from_name("_device", kind), threads); },
      "kind"_a, "threads"_a = 1, nb::rv_policy::take_ownership,
      "Test hook: a Device of `kind` ('cpu' or 'metal') even where this build has no backend for it, so "
      "that ops recorded for it fail.");
  ops.def(
      "_seam_probe",
      [](const std::string& op, bind::Array x, bind::Array w, std::vector<std::string> devices,
         std::optional<Encoder*> encoder) {
        const char* name = "_seam_probe";
        if (devices.size() != 3) fail(name, "devices names the device kind of x, w and y");
        const DeviceKind kx = device_kind_from_name(name, devices[0]), kw = device_kind_from_name(name, devices[1]),
                         ky = device_kind_from_name(name, devices[2]);
        Tensor tx = copy_on(bind::from_numpy(name, "x", x), kx), tw = copy_on(bind::from_numpy(name, "w", w), kw);
        if (tx.ndim() != 2 || tw.ndim() < 1) fail(name, "x must be 2-D and w at least 1-D");
        Tensor ty;
        if (op == "rms_norm") {
          ty = empty_on(tx.shape, ky);
          bind::encode(encoder, [&](Encoder& enc) { ops::rms_norm(enc, tx, tw, ty, 1e-6f); });
        } else if (op == "matmul") {
          ty = empty_on({tx.dim(0), tw.dim(0)}, ky);
          bind::encode(encoder, [&](Encoder& enc) { ops::matmul(enc, tx, tw, ty); });
        } else {
          fail(name, "op must be 'rms_norm' or 'matmul', got '" + op + "'");
        }
        return bind::to_numpy(ty);
      },
      "op"_a, "x"_a, "w"_a, "devices"_a, nb::kw_only(), "encoder"_a = nb::none(),
      "Test hook: runs rms_norm(x, w) or matmul(x, w) (float32) with x, w and the output y in buffers "
      "tagged as memory of the device kinds in `devices` (three names), on `encoder` or a fresh CPU one.");
  ops.def(
      "_metal_launch",
      [](const std::string& kernel, nb::bytes args, std::vector<std::tuple<uint32_t, bind::Array, std::string>> buffers,
         std::array<uint32_t, 3> grid, std::array<uint32_t, 3> tg, std::vector<uint32_t> tg_mem, Encoder* encoder) {
        const char* op = "_metal_launch";
        gpu::Launch l{kernel, std::vector<uint8_t>(args.size()), {}, grid, tg, std::move(tg_mem)};
        std::memcpy(l.args.data(), args.c_str(), args.size());
        for (auto& [index, array, access] : buffers) {
          const gpu::Access a = access == "r" ? gpu::Access::Read : access == "w" ? gpu::Access::Write
                                : access == "rw" ? gpu::Access::ReadWrite
                                                 : (fail(op, "access must be 'r', 'w' or 'rw'"), gpu::Access::Read);
          l.bindings.push_back({index, bind::from_numpy(op, "buffer", array), a});
        }
        encoder->launch(std::move(l));
      },
      "kernel"_a, "args"_a, "buffers"_a, "grid"_a, "tg"_a, "tg_mem"_a, "encoder"_a,
      "Test hook: records one raw GPU launch on a Metal encoder: buffers are (index, array, 'r'|'w'|'rw').");
}
