#import <Metal/Metal.h>

#include <stdexcept>

#include "metal/encoder.h"

namespace eyas::metal {

static bool any_overlap(const std::vector<Range>& a, const Range& r) {
  for (const Range& x : a)
    if (x.overlaps(r)) return true;
  return false;
}

Encoder::Encoder(Context& ctx, bool serial) : ctx_(ctx), serial_(serial) {
  @autoreleasepool {  // callers are plain C++ threads with no pool of their own
    id<MTLCommandQueue> q = (id<MTLCommandQueue>)ctx.queue();
    id<MTLCommandBuffer> cmd = [[q commandBuffer] retain];
    cmd_ = (void*)cmd;
    enc_ = (void*)[[cmd computeCommandEncoderWithDispatchType:MTLDispatchTypeConcurrent] retain];
  }
}

Encoder::~Encoder() {
  [(id<MTLComputeCommandEncoder>)enc_ release];
  [(id<MTLCommandBuffer>)cmd_ release];
}

void Encoder::dispatch(const std::string& kernel, const void* args, size_t args_len, std::initializer_list<Arg> reads,
                       std::initializer_list<Arg> writes, const uint32_t grid[3], const uint32_t tg[3],
                       std::initializer_list<uint32_t> tg_mem) {
  id<MTLComputeCommandEncoder> enc = (id<MTLComputeCommandEncoder>)enc_;
  // A hazard with anything since the last barrier: RAW and WAW against writes, WAR against reads.
  bool hazard = serial_;
  for (const Arg& a : reads) hazard = hazard || any_overlap(writes_, {uintptr_t(a.ptr), uintptr_t(a.ptr) + a.bytes});
  for (const Arg& a : writes) {
    const Range r{uintptr_t(a.ptr), uintptr_t(a.ptr) + a.bytes};
    hazard = hazard || any_overlap(writes_, r) || any_overlap(reads_, r);
  }
  if (hazard) {
    [enc memoryBarrierWithScope:MTLBarrierScopeBuffers];
    reads_.clear();
    writes_.clear();
    ++num_barriers_;
  }
  [enc setComputePipelineState:(id<MTLComputePipelineState>)ctx_.pipeline(kernel)];
  if (args) [enc setBytes:args length:args_len atIndex:0];  // Apple: setBytes is for data under 4 KB
  NSUInteger index = 1;
  for (const auto* list : {&reads, &writes})
    for (const Arg& a : *list) {
      BufferRef b = ctx_.wrap(a.ptr, a.bytes);
      [enc setBuffer:(id<MTLBuffer>)b.buffer offset:b.offset atIndex:index++];
    }
  NSUInteger tg_index = 0;
  for (uint32_t len : tg_mem) [enc setThreadgroupMemoryLength:len atIndex:tg_index++];  // multiples of 16
  [enc dispatchThreadgroups:MTLSizeMake(grid[0], grid[1], grid[2])
      threadsPerThreadgroup:MTLSizeMake(tg[0], tg[1], tg[2])];
  for (const Arg& a : reads) reads_.push_back({uintptr_t(a.ptr), uintptr_t(a.ptr) + a.bytes});
  for (const Arg& a : writes) writes_.push_back({uintptr_t(a.ptr), uintptr_t(a.ptr) + a.bytes});
}

void Encoder::commit_and_wait() {
  id<MTLCommandBuffer> cmd = (id<MTLCommandBuffer>)cmd_;
  [(id<MTLComputeCommandEncoder>)enc_ endEncoding];
  [cmd commit];
  [cmd waitUntilCompleted];
  if ([cmd status] == MTLCommandBufferStatusError)
    throw std::runtime_error(std::string("[metal] command buffer failed: ") +
                             [[[cmd error] localizedDescription] UTF8String]);
}

}  // namespace eyas::metal
