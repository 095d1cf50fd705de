// The emulator driver: runs Launches through the MSL emulator (tests/metal_emu), the same .metal
// sources compiled for the CPU with one fiber per GPU thread. It meets the emulator at its C ABI
// (emu_dispatch in tests/metal_emu/executor.cpp), loaded with dlopen, so the engine does not
// link against it and a wheel does not depend on the clang that builds it. Launches run one
// after another in list order: a barrier needs no work, and the encoder already permuted each
// group by its schedule. The emulator's state is thread-local, so any thread may run a list.
#include <dlfcn.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/gpu.h"

namespace eyas::gpu {
namespace {

using DispatchFn = int (*)(const char* name, const void* args, uint32_t args_len, int nbuf, const uint32_t* idx,
                           void* const* ptrs, const uint64_t* lens, const uint32_t* grid, const uint32_t* tg,
                           int ntg, const uint32_t* tg_lens, int schedule, uint64_t seed);
using LastErrorFn = const char* (*)();
using KernelFileFn = const char* (*)(const char* name);

class EmulatorDriver final : public Driver {
 public:
  explicit EmulatorDriver(const std::string& path) : path_(path) {
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char* why = dlerror();
      throw std::invalid_argument("[Device] cannot load the MSL emulator '" + path + "': " + (why ? why : "?"));
    }
    dispatch_ = reinterpret_cast<DispatchFn>(dlsym(handle_, "emu_dispatch"));
    last_error_ = reinterpret_cast<LastErrorFn>(dlsym(handle_, "emu_last_error"));
    kernel_file_ = reinterpret_cast<KernelFileFn>(dlsym(handle_, "emu_kernel_file"));
    if (!dispatch_ || !last_error_ || !kernel_file_) {
      dlclose(handle_);
      throw std::invalid_argument("[Device] '" + path + "' is not an MSL emulator library (no emu_dispatch)");
    }
  }
  ~EmulatorDriver() override { dlclose(handle_); }

  const char* name() const override { return "emulator"; }

  uint32_t max_threads(const std::string& kernel) override {
    if (!kernel_file_(kernel.c_str()))
      throw std::invalid_argument("[metal] unknown kernel '" + kernel + "' (not in the emulator library " + path_ + ")");
    return hooks.thread_limit < kMaxThreads ? hooks.thread_limit : kMaxThreads;
  }

  void run(const std::vector<const Launch*>& list, int schedule, uint64_t seed) override {
    if (hooks.schedule >= 0) schedule = hooks.schedule, seed = hooks.seed;
    std::vector<uint32_t> idx;
    std::vector<void*> ptrs;
    std::vector<uint64_t> lens;
    for (const Launch* l : list) {
      if (!l) continue;  // barrier
      idx.clear(), ptrs.clear(), lens.clear();
      for (const Binding& b : l->bindings) {
        idx.push_back(b.index);
        ptrs.push_back(b.view.data<void>());
        lens.push_back(b.view.nbytes());
      }
      const std::string rec = hooks.record_dir.empty() ? "" : record(*l, schedule, seed);
      const int rc = dispatch_(l->kernel.c_str(), l->args.empty() ? nullptr : l->args.data(), uint32_t(l->args.size()),
                               int(idx.size()), idx.data(), ptrs.data(), lens.data(), l->grid.data(), l->tg.data(),
                               int(l->tg_mem.size()), l->tg_mem.data(), schedule, seed);
      if (rc != 0) throw std::runtime_error("[metal] " + l->kernel + ": " + last_error_());
      if (!rec.empty()) write_result(*l, rec);
    }
  }

 private:
  // The request format of tests/metal_emu/driver.cpp (little-endian): "EMU1", name, args,
  // buffers (index, length, bytes), grid, tg, threadgroup lengths, schedule, seed. Returns the
  // file's path.
  std::string record(const Launch& l, int schedule, uint64_t seed) {
    const std::string path = hooks.record_dir + "/" + std::to_string(recorded_++) + "_" + l.kernel + ".req";
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) throw std::runtime_error("[metal] cannot write " + path);
    auto put = [&](const void* p, size_t n) { std::fwrite(p, 1, n, f); };
    auto u32 = [&](uint32_t v) { put(&v, 4); };
    u32(0x31554d45u);
    u32(uint32_t(l.kernel.size())), put(l.kernel.data(), l.kernel.size());
    u32(uint32_t(l.args.size())), put(l.args.data(), l.args.size());
    u32(uint32_t(l.bindings.size()));
    for (const Binding& b : l.bindings) {
      const uint64_t n = b.view.nbytes();
      u32(b.index), put(&n, 8), put(b.view.data<void>(), n);
    }
    put(l.grid.data(), 12), put(l.tg.data(), 12);
    u32(uint32_t(l.tg_mem.size())), put(l.tg_mem.data(), 4 * l.tg_mem.size());
    const int32_t sched = schedule;
    put(&sched, 4), put(&seed, 8);
    std::fclose(f);
    return path;
  }
  // PATH.out: for each binding the launch writes, its position among the bindings (u32) and
  // its bytes after the run (a read binding may alias a written one, so only writes compare).
  static void write_result(const Launch& l, const std::string& path) {
    std::FILE* f = std::fopen((path + ".out").c_str(), "wb");
    if (!f) throw std::runtime_error("[metal] cannot write " + path + ".out");
    for (uint32_t i = 0; i < l.bindings.size(); ++i) {
      const Binding& b = l.bindings[i];
      if (b.access == Access::Read) continue;
      std::fwrite(&i, 4, 1, f);
      std::fwrite(b.view.data<void>(), 1, b.view.nbytes(), f);
    }
    std::fclose(f);
  }

  std::string path_;
  uint64_t recorded_ = 0;
  void* handle_ = nullptr;
  DispatchFn dispatch_ = nullptr;
  LastErrorFn last_error_ = nullptr;
  KernelFileFn kernel_file_ = nullptr;
};

}  // namespace

std::unique_ptr<Driver> make_emulator_driver(const std::string& path) { return std::make_unique<EmulatorDriver>(path); }

}  // namespace eyas::gpu
