// Memory for large buffers that every decode step streams through once (weight repacks). With 4 KiB
// pages such a stream takes a TLB miss per page (a two-level walk under a hypervisor) and the
// hardware prefetchers stop at every page edge; 2 MiB transparent huge pages remove both.
#pragma once
#include <cstddef>

namespace eyas {

// `bytes` (any size), 64-byte aligned; from 4 MiB up also 2 MiB aligned, its whole 2 MiB pages
// marked for transparent huge pages on Linux before first touch (a hint: the kernel may still use
// small pages). Free with std::free; nullptr when out of memory. EYAS_HUGE_PAGES=0 turns the
// marking off (to measure it).
void* alloc_streamed(size_t bytes);

}  // namespace eyas
