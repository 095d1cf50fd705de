// The GPU seam below the encoder. A Launch is one compute dispatch as plain data: what a Metal
// compute encoder is told (pipeline by name, setBytes at buffer(0), setBuffer per binding,
// threadgroup memory lengths, dispatchThreadgroups). The Metal backend's planners build Launches;
// the encoder derives hazards from their bindings, so what a dispatch declares and what it binds
// cannot drift apart; a Driver replays them. Drivers: Apple's API (macOS builds) and the MSL
// emulator (csrc/metal/driver_emu.cpp), which runs the same .metal sources on the CPU.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace eyas::gpu {

enum class Access : uint8_t { Read, Write, ReadWrite };

struct Binding {
  uint32_t index;  // [[buffer(index)]], 1..kMaxBufferIndex (0 holds the argument bytes)
  Tensor view;     // the bound bytes: [data, data + nbytes)
  Access access;
};

struct Launch {
  std::string kernel;            // [[host_name]] of the kernel
  std::vector<uint8_t> args;     // setBytes at buffer(0); a struct from metal/kernel_args.h
  std::vector<Binding> bindings;
  std::array<uint32_t, 3> grid{1, 1, 1};  // threadgroups
  std::array<uint32_t, 3> tg{1, 1, 1};    // threads per threadgroup
  std::vector<uint32_t> tg_mem;           // [[threadgroup(i)]] lengths in bytes
};

// Metal's limits that every driver enforces alike (Apple Silicon values).
constexpr uint32_t kMaxSetBytes = 4096, kMaxThreadgroupMemory = 32768, kMaxBufferIndex = 30, kMaxThreads = 1024;

class Driver {
 public:
  virtual ~Driver() = default;
  virtual const char* name() const = 0;  // "apple" or "emulator"
  // Threads per threadgroup the kernel's pipeline allows (at most thread_limit);
  // throws std::invalid_argument "[metal] unknown kernel ..." when the library has no such kernel.
  virtual uint32_t max_threads(const std::string& kernel) = 0;
  // Runs `list` in order (a nullptr entry is a buffer barrier: everything before it completes
  // first) and returns when all of it has completed. schedule/seed choose the emulator's thread
  // interleaving (Encoder's Schedule); Apple's driver ignores them. Throws std::runtime_error
  // "[metal] <kernel>: ..." on a failure; the list's effects before the failure may remain.
  virtual void run(const std::vector<const Launch*>& list, int schedule, uint64_t seed) = 0;

  // Test hooks, so tests reach what no default setting does.
  struct Hooks {
    uint32_t thread_limit = kMaxThreads;  // a lower cap on threads per threadgroup of every pipeline
    int matmul_variant = 0;               // 0: by row count; 1: always *_vec; 2: always *_mat
    int schedule = -1;                    // >= 0: the emulator's thread interleaving for every list
    uint64_t seed = 0;
    std::string record_dir;  // emulator: write each launch as request + result files (ASan replay)
  } hooks;
};

// Loads the MSL emulator library (libmsl_emu.so, built by tests/metal_emu/build.py) from `path`.
// Defined in csrc/metal/driver_emu.cpp. Throws std::invalid_argument with the reason.
std::unique_ptr<Driver> make_emulator_driver(const std::string& path);
// Apple's Metal API; defined only in macOS builds with the Metal backend (EYAS_HAS_METAL).
std::unique_ptr<Driver> make_apple_driver();

}  // namespace eyas::gpu
