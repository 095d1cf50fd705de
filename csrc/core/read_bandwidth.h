// The machine's read bandwidth as the decode roofline's numerator: a cold buffer far larger than any
// cache, read by the pool's threads, each its share as 1 or 4 interleaved streams (4 evenly spaced
// ranges, 256 bytes from each in turn). Where one stream per core is latency-bound the 4-stream
// figure is higher, and it is what the matmul kernels aim for (they read that way at small T).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"

namespace eyas {

// Sum of words [w0, w1) of buf read as `streams` interleaved ranges (the sum keeps the reads live).
uint64_t read_streams(const uint64_t* buf, int64_t w0, int64_t w1, int streams);

// Best GB/s of `reps` passes of the pool over buf[words] (its pages touched already), `streams` each.
double read_bandwidth_gbs(ThreadPool& pool, const uint64_t* buf, size_t words, int streams, int reps);

}  // namespace eyas
