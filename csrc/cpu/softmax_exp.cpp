#include "cpu/softmax_exp.h"

#include <atomic>

namespace eyas::cpu {

static std::atomic<bool> g_force_scalar{false};

static bool cpu_has_avx512() {
#if EYAS_X86
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

bool use_avx512() { return cpu_has_avx512() && !g_force_scalar.load(std::memory_order_relaxed); }

void force_scalar(bool on) { g_force_scalar.store(on); }

}  // namespace eyas::cpu
