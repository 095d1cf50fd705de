// Metal host: device, command queue, the metallib and a pipeline cache keyed by kernel name.
// Plain C++ interface (Objective-C++ lives in the .mm files); built on macOS only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace eyas::metal {

class Encoder;

// Opaque handles so this header compiles without the Metal framework.
struct BufferRef {
  void* buffer = nullptr;  // id<MTLBuffer>, shared storage over host memory
  size_t offset = 0;       // byte offset of the view inside it
};

class Context {
 public:
  // Loads eyas.metallib from `metallib_path`; throws std::runtime_error when no GPU exists.
  explicit Context(const std::string& metallib_path);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Compute pipeline of kernel `name` (one of kKernelNames); created once, then cached.
  void* pipeline(const std::string& name);
  // A shared-storage MTLBuffer over host memory [ptr, ptr + bytes), no copy (unified memory);
  // page-rounded and cached, so views of one allocation share one MTLBuffer.
  BufferRef wrap(const void* ptr, size_t bytes);
  void* device();
  void* queue();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace eyas::metal
