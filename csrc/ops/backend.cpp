#include "ops/backend.h"

namespace eyas::ops {

Backend* registered_backend(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::CPU: return &cpu_backend();
    case DeviceKind::Metal: return nullptr;  // the Metal issue: `return &metal_backend();` under EYAS_HAS_METAL
  }
  return nullptr;
}

Backend& backend_for(const char* op, Encoder& enc, std::initializer_list<const Tensor*> tensors) {
  const DeviceKind kind = enc.device().kind();
  for (const Tensor* t : tensors)
    if (t->defined() && t->buffer->device() != kind)
      fail(op, t->describe() + " is in " + device_kind_name(t->buffer->device()) + " memory but the encoder runs on " +
                   device_kind_name(kind) + "; every buffer of a call must be on the encoder's device");
  Backend* b = registered_backend(kind);
  if (!b) fail(op, std::string("this build has no ") + device_kind_name(kind) + " backend");
  return *b;
}

}  // namespace eyas::ops
