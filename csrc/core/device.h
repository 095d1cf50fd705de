// A Device is a backend plus its execution resources (the CPU thread pool).
#pragma once
#include <memory>
#include <string>

#include "core/thread_pool.h"

namespace eyas {

class Device {
 public:
  // backend: "cpu" (always) or "metal" (macOS builds only). threads <= 0 picks the core count.
  explicit Device(const std::string& backend = "cpu", int threads = 0);
  const std::string& backend() const { return backend_; }
  int num_threads() const { return pool_->num_threads(); }
  ThreadPool& pool() { return *pool_; }

 private:
  std::string backend_;
  std::unique_ptr<ThreadPool> pool_;
};

int default_thread_count();

}  // namespace eyas
