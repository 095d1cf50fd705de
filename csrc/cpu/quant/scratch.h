// Per-thread scratch memory that grows and never shrinks, 64-byte aligned. `Slot` keeps the
// buffers of different users apart (the quantized activations stay alive while the AMX
// preparation builds its own layout from them).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

namespace eyas::cpu::quant {

template <int Slot>
inline uint8_t* thread_scratch(size_t bytes) {
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<uint8_t, Free> buf;
  thread_local size_t cap = 0;
  if (bytes > cap) {
    cap = (bytes + 4095) / 4096 * 4096;
    buf.reset(static_cast<uint8_t*>(std::aligned_alloc(64, cap)));
    if (!buf) throw std::bad_alloc();
  }
  return buf.get();
}

// kScratchKernel: a column kernel's own working memory, used only inside one cols() call;
// kScratchUnpacked: a second such buffer (a K-quant weight row unpacked once for every row).
enum : int { kScratchActivations = 0, kScratchAmxPrep = 1, kScratchWeightPack = 2, kScratchKernel = 3, kScratchUnpacked = 4 };

}  // namespace eyas::cpu::quant
