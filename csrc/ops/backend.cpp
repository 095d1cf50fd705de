#include "ops/backend.h"

namespace eyas::ops {

Backend* registered_backend(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::CPU: return &cpu_backend();
    case DeviceKind::Metal: return &metal_backend();
  }
  return nullptr;
}

Backend& backend_for(const char* op, Encoder& enc, std::initializer_list<const Tensor*> tensors) {
  const DeviceKind kind = enc.device().kind();
  for (const Tensor* t : tensors)
    if (t->defined() && !memory_usable_on(t->buffer->device(), kind))
      fail(op, t->describe() + " is in " + device_kind_name(t->buffer->device()) + " memory but the encoder runs on " +
                   device_kind_name(kind) + "; every buffer of a call must be memory the encoder's device can use");
  Backend* b = registered_backend(kind);
  if (!b) fail(op, std::string("this build has no ") + device_kind_name(kind) + " backend");
  if (kind != DeviceKind::CPU && !enc.device().driver())
    fail(op, std::string("this ") + device_kind_name(kind) + " device has no driver (a test device)");
  return *b;
}

}  // namespace eyas::ops
