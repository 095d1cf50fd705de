// Asks the OS to drop the resident pages of a read-only byte range that will seldom be read again
// (a weight after its repack or fused copy was built): file-backed pages leave this process's
// resident set and fault back in from the file if read. A hint only: the bytes never change, and
// where the OS lacks the call (not Linux 5.4+) nothing happens.
#pragma once
#include <cstddef>

namespace eyas {

// Whole pages inside [data, data + bytes) only: neighbours sharing the edge pages stay resident.
void page_out(const void* data, size_t bytes);

}  // namespace eyas
