#include "core/buffer.h"

#include <atomic>
#include <cstdlib>
#include <new>
#include <stdexcept>

namespace eyas {

static std::atomic<uint64_t> next_buffer_id{1};
// 64 bytes = one cache line and one AVX-512 register; Metal's page alignment is handled there.
constexpr size_t kAlign = 64;

Buffer::Buffer(void* data, size_t size, bool owned, std::shared_ptr<void> owner, bool read_only, DeviceKind device)
    : data_(data),
      size_(size),
      owned_(owned),
      read_only_(read_only),
      device_(device),
      owner_(std::move(owner)),
      id_(next_buffer_id++) {}

Buffer::~Buffer() {
  if (owned_) std::free(data_);
}

std::shared_ptr<Buffer> Buffer::allocate(size_t bytes, DeviceKind device) {
  size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  if (rounded == 0) rounded = kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (!p) throw std::bad_alloc();
  return std::shared_ptr<Buffer>(new Buffer(p, bytes, true, nullptr, false, device));
}

std::shared_ptr<void> Buffer::derived(const DerivedKey& key) const {
  std::lock_guard<std::mutex> lock(derived_mu_);
  auto it = derived_.find(key);
  return it == derived_.end() ? nullptr : it->second;
}

void Buffer::set_derived(const DerivedKey& key, std::shared_ptr<void> value) {
  std::lock_guard<std::mutex> lock(derived_mu_);
  derived_[key] = std::move(value);
}

std::shared_ptr<Buffer> Buffer::wrap(void* data, size_t bytes, std::shared_ptr<void> owner, bool read_only,
                                     DeviceKind device) {
  if (!data && bytes) throw std::invalid_argument("[Buffer.wrap] null pointer with non-zero size");
  return std::shared_ptr<Buffer>(new Buffer(data, bytes, false, std::move(owner), read_only, device));
}

}  // namespace eyas
