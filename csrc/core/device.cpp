#include "core/device.h"

#include <stdexcept>
#include <thread>

namespace eyas {

int default_thread_count() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : int(n);
}

static DeviceKind available_kind(const std::string& backend) {
  const DeviceKind kind = device_kind_from_name("Device", backend);
  if (kind == DeviceKind::Metal)
    throw std::invalid_argument("[Device] the metal backend is only built on macOS; use device='cpu'");
  return kind;
}

Device::Device(const std::string& backend, int threads) : Device(available_kind(backend), threads) {}

Device::Device(DeviceKind kind, int threads)
    : kind_(kind),
      backend_(device_kind_name(kind)),
      pool_(std::make_unique<ThreadPool>(threads <= 0 ? default_thread_count() : threads)) {}

}  // namespace eyas
