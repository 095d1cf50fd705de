// A Device is a backend plus its execution resources: the CPU thread pool (kernels of the CPU
// backend, host steps of the Metal one) and, for Metal, the driver that runs GPU launches.
#pragma once
#include <memory>
#include <string>

#include "core/device_kind.h"
#include "core/gpu.h"
#include "core/thread_pool.h"

namespace eyas {

class Device {
 public:
  // backend: "cpu" or "metal". threads <= 0 picks the core count. A Metal device runs on Apple's
  // API in macOS builds with the Metal backend; elsewhere on the MSL emulator library at
  // `emulator` (or $EYAS_METAL_EMULATOR), chosen explicitly, never as a silent fallback.
  explicit Device(const std::string& backend = "cpu", int threads = 0, const std::string& emulator = "");
  // A device of any kind with no driver, whether or not this build can run it: ops recorded for
  // it then fail with a clear error (csrc/ops/backend.h). Used by tests of that seam.
  Device(DeviceKind kind, int threads);
  DeviceKind kind() const { return kind_; }
  const std::string& backend() const { return backend_; }
  int num_threads() const { return pool_->num_threads(); }
  ThreadPool& pool() { return *pool_; }
  gpu::Driver* driver() { return driver_.get(); }  // nullptr on the CPU

 private:
  DeviceKind kind_;
  std::string backend_;  // device_kind_name(kind_)
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<gpu::Driver> driver_;
};

int default_thread_count();

}  // namespace eyas
