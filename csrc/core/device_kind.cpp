#include "core/device_kind.h"

#include <stdexcept>

namespace eyas {

const char* device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::CPU: return "cpu";
    case DeviceKind::Metal: return "metal";
  }
  return "unknown";
}

DeviceKind device_kind_from_name(const char* op, const std::string& name) {
  for (int k = 0; k < kNumDeviceKinds; ++k)
    if (name == device_kind_name(DeviceKind(k))) return DeviceKind(k);
  throw std::invalid_argument(std::string("[") + op + "] unknown backend '" + name + "' (expected 'cpu' or 'metal')");
}

}  // namespace eyas
