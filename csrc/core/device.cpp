#include "core/device.h"

#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace eyas {

int default_thread_count() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : int(n);
}

static std::unique_ptr<gpu::Driver> metal_driver(const std::string& emulator) {
  std::string path = emulator;
  if (path.empty())
    if (const char* env = std::getenv("EYAS_METAL_EMULATOR")) path = env;
  if (!path.empty()) return gpu::make_emulator_driver(path);
#ifdef EYAS_HAS_METAL
  return gpu::make_apple_driver();
#else
  throw std::invalid_argument(
      "[Device] this build has no Apple Metal driver (it is built on macOS only); on other systems "
      "device='metal' runs on the MSL emulator: pass emulator=PATH or set EYAS_METAL_EMULATOR=PATH "
      "to libmsl_emu.so (build it with `python -m tests.metal_emu.build`)");
#endif
}

Device::Device(const std::string& backend, int threads, const std::string& emulator)
    : Device(device_kind_from_name("Device", backend), threads) {
  if (kind_ == DeviceKind::Metal) driver_ = metal_driver(emulator);
  else if (!emulator.empty()) throw std::invalid_argument("[Device] emulator= applies to device 'metal' only");
}

Device::Device(DeviceKind kind, int threads)
    : kind_(kind),
      backend_(device_kind_name(kind)),
      pool_(std::make_unique<ThreadPool>(threads <= 0 ? default_thread_count() : threads)) {}

}  // namespace eyas
