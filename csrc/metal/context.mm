// Objective-C++, manual retain/release (no ARC), so it builds the same with or without
// -fobjc-arc being available.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <map>
#include <mutex>
#include <stdexcept>
#include <unistd.h>

#include "metal/context.h"
#include "metal/kernel_names.h"

namespace eyas::metal {

struct Context::Impl {
  id<MTLDevice> device = nil;
  id<MTLCommandQueue> queue = nil;
  id<MTLLibrary> library = nil;
  std::mutex mu;
  std::map<std::string, id<MTLComputePipelineState>> pipelines;
  std::map<uintptr_t, std::pair<size_t, id<MTLBuffer>>> wrapped;  // page base -> (length, buffer)
};

Context::Context(const std::string& metallib_path) : impl_(new Impl) {
  @autoreleasepool {
  impl_->device = MTLCreateSystemDefaultDevice();
  if (!impl_->device) throw std::runtime_error("[metal] no Metal device on this machine");
  impl_->queue = [impl_->device newCommandQueue];
  NSError* err = nil;
  NSURL* url = [NSURL fileURLWithPath:[NSString stringWithUTF8String:metallib_path.c_str()]];
  impl_->library = [impl_->device newLibraryWithURL:url error:&err];
  if (!impl_->library)
    throw std::runtime_error("[metal] cannot load " + metallib_path + ": " +
                             (err ? std::string([[err localizedDescription] UTF8String]) : "unknown error"));
  }
}

Context::~Context() {
  for (auto& [name, p] : impl_->pipelines) [p release];
  for (auto& [base, b] : impl_->wrapped) [b.second release];
  [impl_->library release];
  [impl_->queue release];
  [impl_->device release];
}

void* Context::pipeline(const std::string& name) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->pipelines.find(name);
  if (it != impl_->pipelines.end()) return (void*)it->second;
  id<MTLFunction> fn = [impl_->library newFunctionWithName:[NSString stringWithUTF8String:name.c_str()]];
  if (!fn) throw std::runtime_error("[metal] kernel '" + name + "' is not in the metallib");
  NSError* err = nil;
  id<MTLComputePipelineState> p = [impl_->device newComputePipelineStateWithFunction:fn error:&err];
  [fn release];
  if (!p)
    throw std::runtime_error("[metal] pipeline '" + name + "': " +
                             (err ? std::string([[err localizedDescription] UTF8String]) : "unknown error"));
  impl_->pipelines[name] = p;
  return (void*)p;
}

BufferRef Context::wrap(const void* ptr, size_t bytes) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const uintptr_t page = uintptr_t(getpagesize());
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  const uintptr_t base = p & ~(page - 1);
  const size_t len = ((p + bytes - base) + page - 1) & ~(page - 1);
  auto it = impl_->wrapped.upper_bound(p);
  if (it != impl_->wrapped.begin()) {
    --it;  // the wrapped range starting at or below p
    if (it->first <= p && p + bytes <= it->first + it->second.first)
      return {(void*)it->second.second, size_t(p - it->first)};
  }
  id<MTLBuffer> b = [impl_->device newBufferWithBytesNoCopy:reinterpret_cast<void*>(base)
                                                     length:len
                                                    options:MTLResourceStorageModeShared
                                                deallocator:nil];
  if (!b) throw std::runtime_error("[metal] cannot wrap host memory as a shared buffer");
  impl_->wrapped[base] = {len, b};
  return {(void*)b, size_t(p - base)};
}

void* Context::device() { return (void*)impl_->device; }
void* Context::queue() { return (void*)impl_->queue; }

}  // namespace eyas::metal
