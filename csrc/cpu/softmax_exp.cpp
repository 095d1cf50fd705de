#include "cpu/softmax_exp.h"

#include <atomic>

namespace eyas::cpu {

static std::atomic<int> g_simd_cap{2};

static bool cpu_has_avx512() {
#if EYAS_X86
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

static bool cpu_has_avx2() {
#if EYAS_X86
  static const bool has =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  return has;
#else
  return false;
#endif
}

bool use_avx512() { return cpu_has_avx512() && g_simd_cap.load(std::memory_order_relaxed) >= 2; }
bool use_avx2() { return cpu_has_avx2() && g_simd_cap.load(std::memory_order_relaxed) >= 1; }

void cap_simd(int level) { g_simd_cap.store(level); }
void force_scalar(bool on) { g_simd_cap.store(on ? 0 : 2); }

}  // namespace eyas::cpu
