// A Buffer is a span of bytes a kernel may read or write: owned (aligned allocation) or a
// zero-copy view of external memory (numpy array, memory-mapped file) kept alive by `owner`.
// It belongs to one device kind (CPU unless created for another): only that backend's kernels
// may touch it, and every op checks so before it dispatches.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "core/device_kind.h"

namespace eyas {

class Buffer {
 public:
  static std::shared_ptr<Buffer> allocate(size_t bytes, DeviceKind device = DeviceKind::CPU);
  static std::shared_ptr<Buffer> wrap(void* data, size_t bytes, std::shared_ptr<void> owner, bool read_only = false,
                                      DeviceKind device = DeviceKind::CPU);

  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  bool read_only() const { return read_only_; }
  DeviceKind device() const { return device_; }
  uint64_t id() const { return id_; }  // unique per process, for hazard tracking and messages

  // Data derived from this buffer's bytes (e.g. a weight repacked for a kernel), kept with the
  // buffer and freed with it, so it can never outlive or be mistaken for another buffer's.
  // Keyed by the caller (e.g. view offset, type, shape); thread-safe.
  using DerivedKey = std::array<int64_t, 4>;
  std::shared_ptr<void> derived(const DerivedKey& key) const;
  void set_derived(const DerivedKey& key, std::shared_ptr<void> value);

 private:
  Buffer(void* data, size_t size, bool owned, std::shared_ptr<void> owner, bool read_only, DeviceKind device);
  void* data_;
  size_t size_;
  bool owned_;
  bool read_only_;
  DeviceKind device_;
  std::shared_ptr<void> owner_;
  uint64_t id_;
  mutable std::mutex derived_mu_;
  std::map<DerivedKey, std::shared_ptr<void>> derived_;
};

using BufferPtr = std::shared_ptr<Buffer>;

}  // namespace eyas
