// A Device is a backend plus its execution resources (the CPU thread pool).
#pragma once
#include <memory>
#include <string>

#include "core/device_kind.h"
#include "core/thread_pool.h"

namespace eyas {

class Device {
 public:
  // backend: "cpu" (always) or "metal" (macOS builds only). threads <= 0 picks the core count.
  explicit Device(const std::string& backend = "cpu", int threads = 0);
  // A device of any kind, whether or not this build has a backend for it: ops recorded for it
  // then fail with a clear error (csrc/ops/backend.h). Used by tests of that seam.
  Device(DeviceKind kind, int threads);
  DeviceKind kind() const { return kind_; }
  const std::string& backend() const { return backend_; }
  int num_threads() const { return pool_->num_threads(); }
  ThreadPool& pool() { return *pool_; }

 private:
  DeviceKind kind_;
  std::string backend_;  // device_kind_name(kind_)
  std::unique_ptr<ThreadPool> pool_;
};

int default_thread_count();

}  // namespace eyas
