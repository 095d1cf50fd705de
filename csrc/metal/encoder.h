// Metal command encoder with the semantics of csrc/core/encoder.h: dispatches in one
// concurrent compute encoder may overlap; a buffer barrier is inserted exactly where a
// read-after-write, write-after-read or write-after-write hazard on byte ranges needs one
// (as MLX's maybeInsertBarrier). `serial` puts a barrier after every dispatch, for bisecting.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "metal/context.h"

namespace eyas::metal {

struct Range {
  uintptr_t lo, hi;  // [lo, hi) in host addresses
  bool overlaps(const Range& o) const { return lo < o.hi && o.lo < hi; }
};

struct Arg {
  const void* ptr;  // host address of the tensor data
  size_t bytes;
};

class Encoder {
 public:
  Encoder(Context& ctx, bool serial = false);
  ~Encoder();

  // Binds `args` (setBytes, index 0) and tensors at 1..n in order (reads, then writes), sets
  // threadgroup memory lengths and encodes dispatchThreadgroups(grid, tg).
  void dispatch(const std::string& kernel, const void* args, size_t args_len, std::initializer_list<Arg> reads,
                std::initializer_list<Arg> writes, const uint32_t grid[3], const uint32_t tg[3],
                std::initializer_list<uint32_t> tg_mem = {});
  // Ends encoding, commits and waits; throws std::runtime_error with the GPU error if any.
  void commit_and_wait();
  int64_t num_barriers() const { return num_barriers_; }

 private:
  Context& ctx_;
  bool serial_;
  void* cmd_ = nullptr;  // id<MTLCommandBuffer>
  void* enc_ = nullptr;  // id<MTLComputeCommandEncoder>
  std::vector<Range> reads_, writes_;  // since the last barrier
  int64_t num_barriers_ = 0;
};

}  // namespace eyas::metal
