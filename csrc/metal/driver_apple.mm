// The Apple driver: replays launch lists on the GPU through Apple's Metal API. The only
// Objective-C++ in eyas (manual retain/release, built with -fno-objc-arc); everything above it
// (kernel choice, bindings, grids, hazards) is the portable C++ the emulator driver runs on Linux.
// Compiled on macOS only (cmake/metal.cmake); docs/metal.md lists what only a Mac can confirm.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "core/gpu.h"

namespace eyas::gpu {
namespace {

std::string describe(NSError* err) { return err ? std::string([[err localizedDescription] UTF8String]) : "unknown error"; }

// eyas.metallib sits next to the extension module (installed together); EYAS_METALLIB overrides.
std::string metallib_path() {
  if (const char* env = std::getenv("EYAS_METALLIB")) return env;
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&metallib_path), &info) || !info.dli_fname)
    throw std::runtime_error("[metal] cannot locate the eyas module to find eyas.metallib; set EYAS_METALLIB");
  std::string dir(info.dli_fname);
  return dir.substr(0, dir.find_last_of('/') + 1) + "eyas.metallib";
}

class AppleDriver final : public Driver {
 public:
  AppleDriver() {
    @autoreleasepool {
      device_ = MTLCreateSystemDefaultDevice();
      if (!device_) throw std::invalid_argument("[Device] no Metal GPU on this machine");
      queue_ = [device_ newCommandQueue];
      const std::string path = metallib_path();
      NSError* err = nil;
      NSURL* url = [NSURL fileURLWithPath:[NSString stringWithUTF8String:path.c_str()]];
      library_ = [device_ newLibraryWithURL:url error:&err];
      if (!library_) throw std::invalid_argument("[Device] cannot load " + path + ": " + describe(err));
    }
  }
  ~AppleDriver() override {
    for (auto& [name, p] : pipelines_) [p release];
    [library_ release];
    [queue_ release];
    [device_ release];
  }

  const char* name() const override { return "apple"; }

  uint32_t max_threads(const std::string& kernel) override {
    const uint32_t n = uint32_t([pipeline(kernel) maxTotalThreadsPerThreadgroup]);
    return n < hooks.thread_limit ? n : hooks.thread_limit;
  }

  void run(const std::vector<const Launch*>& list, int, uint64_t) override {
    @autoreleasepool {
      std::map<const Buffer*, std::pair<id<MTLBuffer>, size_t>> wrapped;  // buffer -> (MTLBuffer, offset of data)
      id<MTLCommandBuffer> cmd = [queue_ commandBuffer];
      id<MTLComputeCommandEncoder> enc = [cmd computeCommandEncoderWithDispatchType:MTLDispatchTypeConcurrent];
      for (const Launch* l : list) {
        if (!l) {
          [enc memoryBarrierWithScope:MTLBarrierScopeBuffers];
          continue;
        }
        [enc setComputePipelineState:pipeline(l->kernel)];
        if (!l->args.empty()) [enc setBytes:l->args.data() length:l->args.size() atIndex:0];
        for (const Binding& b : l->bindings) {
          auto it = wrapped.find(b.view.buffer.get());
          if (it == wrapped.end()) it = wrapped.emplace(b.view.buffer.get(), wrap(*b.view.buffer)).first;
          [enc setBuffer:it->second.first offset:it->second.second + b.view.offset atIndex:b.index];
        }
        for (size_t i = 0; i < l->tg_mem.size(); ++i) [enc setThreadgroupMemoryLength:l->tg_mem[i] atIndex:i];
        [enc dispatchThreadgroups:MTLSizeMake(l->grid[0], l->grid[1], l->grid[2])
            threadsPerThreadgroup:MTLSizeMake(l->tg[0], l->tg[1], l->tg[2])];
      }
      [enc endEncoding];
      [cmd commit];
      [cmd waitUntilCompleted];
      for (auto& [buffer, w] : wrapped) [w.first release];
      if ([cmd status] == MTLCommandBufferStatusError)
        throw std::runtime_error("[metal] command buffer failed: " + describe([cmd error]));
    }
  }

 private:
  id<MTLComputePipelineState> pipeline(const std::string& kernel) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pipelines_.find(kernel);
    if (it != pipelines_.end()) return it->second;
    id<MTLFunction> fn = [library_ newFunctionWithName:[NSString stringWithUTF8String:kernel.c_str()]];
    if (!fn) throw std::invalid_argument("[metal] unknown kernel '" + kernel + "' (not in eyas.metallib)");
    NSError* err = nil;
    id<MTLComputePipelineState> p = [device_ newComputePipelineStateWithFunction:fn error:&err];
    [fn release];
    if (!p) throw std::runtime_error("[metal] pipeline '" + kernel + "': " + describe(err));
    pipelines_[kernel] = p;
    return p;
  }

  // Shared memory is wrapped without a copy over the pages that hold the buffer, for one list:
  // a later list wraps again, so a freed and reused address never meets a stale MTLBuffer.
  std::pair<id<MTLBuffer>, size_t> wrap(const Buffer& b) {
    const uintptr_t page = uintptr_t(getpagesize()), p = reinterpret_cast<uintptr_t>(b.data());
    const uintptr_t base = p & ~(page - 1);
    const size_t len = ((p + b.size() - base) + page - 1) & ~(page - 1);
    id<MTLBuffer> m = [device_ newBufferWithBytesNoCopy:reinterpret_cast<void*>(base)
                                                 length:len
                                                options:MTLResourceStorageModeShared
                                            deallocator:nil];
    if (!m) throw std::runtime_error("[metal] cannot wrap host memory as a shared buffer");
    return {m, size_t(p - base)};
  }

  id<MTLDevice> device_ = nil;
  id<MTLCommandQueue> queue_ = nil;
  id<MTLLibrary> library_ = nil;
  std::mutex mu_;
  std::map<std::string, id<MTLComputePipelineState>> pipelines_;
};

}  // namespace

std::unique_ptr<Driver> make_apple_driver() { return std::make_unique<AppleDriver>(); }

}  // namespace eyas::gpu
