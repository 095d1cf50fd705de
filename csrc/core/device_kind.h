// Which backend's kernels may touch a buffer, and which backend an encoder records for. Every
// op checks that the two agree before it reaches a backend (csrc/ops/backend.h).
#pragma once
#include <cstdint>
#include <string>

namespace eyas {

enum class DeviceKind : int32_t { CPU = 0, Metal = 1 };
constexpr int kNumDeviceKinds = 2;

// Whether memory of kind `memory` may be handed to kernels of a `device` encoder: its own kind,
// and CPU memory on Metal (Apple Silicon's GPU shares memory with the CPU; numpy arrays and
// mapped weights are bound with no copy).
inline bool memory_usable_on(DeviceKind memory, DeviceKind device) {
  return memory == device || (device == DeviceKind::Metal && memory == DeviceKind::CPU);
}

// "cpu" or "metal", as Device("...") spells them.
const char* device_kind_name(DeviceKind kind);
// The kind named `name`; throws std::invalid_argument prefixed "[op]" for any other name.
DeviceKind device_kind_from_name(const char* op, const std::string& name);

}  // namespace eyas
