#include "core/huge_pages.h"

#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace eyas {

namespace {
constexpr size_t kHuge = size_t(2) << 20;

bool huge_pages_on() {
  static const bool on = [] {
    const char* v = std::getenv("EYAS_HUGE_PAGES");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}
}  // namespace

void* alloc_streamed(size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= 2 * kHuge && huge_pages_on()) {
    const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;  // aligned_alloc needs a multiple
    void* p = std::aligned_alloc(kHuge, rounded);
    // Whole huge pages only, before the first write faults pages in: a huge page at the tail would
    // make its unused part resident too.
    if (p) madvise(p, bytes / kHuge * kHuge, MADV_HUGEPAGE);
    return p;
  }
#endif
  return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
}

}  // namespace eyas
