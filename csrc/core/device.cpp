#include "core/device.h"

#include <stdexcept>
#include <thread>

namespace eyas {

int default_thread_count() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : int(n);
}

Device::Device(const std::string& backend, int threads) : backend_(backend) {
  if (backend == "metal")
    throw std::invalid_argument("[Device] the metal backend is only built on macOS; use device='cpu'");
  if (backend != "cpu") throw std::invalid_argument("[Device] unknown backend '" + backend + "' (expected 'cpu' or 'metal')");
  pool_ = std::make_unique<ThreadPool>(threads <= 0 ? default_thread_count() : threads);
}

}  // namespace eyas
