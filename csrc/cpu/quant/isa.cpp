#include "cpu/quant/isa.h"

#include <atomic>
#include <cstdlib>
#include <stdexcept>

#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#endif

namespace eyas::cpu::quant {

static std::atomic<bool> g_gfni_allowed{true};

bool gfni_usable() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("gfni");
  return has && g_gfni_allowed.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

void allow_gfni(bool on) { g_gfni_allowed.store(on, std::memory_order_relaxed); }

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
    case Isa::Amx: return "amx";
    case Isa::Neon: return "neon";
  }
  return "?";
}

static bool request_amx() {
#if defined(__x86_64__) && defined(__linux__)
  // ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18); refused on old kernels.
  return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
  return false;
#endif
}

static bool supported(Isa isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2:
      return table_avx2() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2");
    case Isa::Avx512:
      return table_avx512() && supported(Isa::Avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni") &&
             __builtin_cpu_supports("avx512vbmi");
    case Isa::Amx: return table_amx() && supported(Isa::Avx512) && amx_usable();
    default: return false;
  }
#elif defined(__aarch64__) && defined(__linux__)
  if (isa == Isa::Neon) return table_neon() && (getauxval(AT_HWCAP) & HWCAP_ASIMDDP);
  return isa == Isa::Scalar;
#else
  return isa == Isa::Scalar;
#endif
}

bool amx_usable() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool ok = __builtin_cpu_supports("amx-int8") && __builtin_cpu_supports("amx-tile") && request_amx();
  return ok;
#else
  return false;
#endif
}

static Isa parse(const std::string& name) {
  for (Isa i : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Amx, Isa::Neon})
    if (name == isa_name(i)) return i;
  throw std::invalid_argument("[set_isa] unknown instruction set '" + name + "' (scalar, avx2, avx512, amx, neon)");
}

static Isa best() {
  Isa b = Isa::Scalar;
  for (Isa i : {Isa::Avx2, Isa::Avx512, Isa::Amx, Isa::Neon})
    if (supported(i)) b = i;
  return b;
}

static std::atomic<int>& slot() {
  static std::atomic<int> s{[] {
    const char* env = std::getenv("EYAS_ISA");
    if (env && *env) {
      Isa want = parse(env);  // a bad value fails loudly at first use
      if (supported(want)) return int(want);
    }
    return int(best());
  }()};
  return s;
}

std::vector<std::string> available_isas() {
  std::vector<std::string> out;
  for (Isa i : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Amx, Isa::Neon})
    if (supported(i)) out.push_back(isa_name(i));
  return out;
}

void set_isa(const std::string& name) {
  Isa want = name == "best" ? best() : parse(name);
  if (!supported(want))
    throw std::invalid_argument(std::string("[set_isa] '") + name + "' is not supported on this CPU");
  slot().store(int(want));
}

Isa current_isa() { return Isa(slot().load()); }

const Table& current_table() {
  switch (current_isa()) {
    case Isa::Amx: return *table_amx();
    case Isa::Avx512: return *table_avx512();
    case Isa::Avx2: return *table_avx2();
    case Isa::Neon: return *table_neon();
    default: return table_scalar();
  }
}

}  // namespace eyas::cpu::quant
