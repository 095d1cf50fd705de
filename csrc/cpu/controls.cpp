// Definitions of csrc/ops/cpu_controls.h.
#include "ops/cpu_controls.h"

#include <cstdint>
#include <stdexcept>

#include "cpu/matmul.h"
#include "cpu/quant/isa.h"
#include "cpu/softmax_exp.h"

namespace eyas::ops {

void set_matmul_isa(const std::string& name) { cpu::quant::set_isa(name); }
std::string matmul_isa() { return cpu::matmul_isa(); }
std::vector<std::string> available_matmul_isas() { return cpu::quant::available_isas(); }
void allow_gfni(bool on) { cpu::quant::allow_gfni(on); }
bool gfni_in_use() { return cpu::quant::gfni_usable(); }

void force_scalar_kernels(bool on) { cpu::force_scalar(on); }

static const char* const kSimdLevels[] = {"scalar", "avx2", "avx512"};

void cap_simd_kernels(const std::string& level) {
  for (int i = 0; i < 3; ++i)
    if (level == kSimdLevels[i]) return cpu::cap_simd(i);
  throw std::invalid_argument("[simd] unknown level '" + level + "' (scalar, avx2, avx512)");
}

std::vector<std::string> available_simd_levels() {
  std::vector<std::string> out{"scalar"};
  cpu::cap_simd(2);
  if (cpu::use_avx2()) out.push_back("avx2");
  if (cpu::use_avx512()) out.push_back("avx512");
  return out;
}

Tensor repacked_weight(const Tensor& w) {
  // The layout does not depend on the call's row count; 2 rows is any small call.
  const MatmulArgs a{2, int32_t(w.dim(0)), int32_t(w.dim(1)), int32_t(w.dtype)};
  Tensor out = Tensor::empty(DType::U8, {int64_t(cpu::matmul_pack_bytes(a))});
  ThreadPool pool(1);
  cpu::matmul_pack_weight(a, w.data<uint8_t>(), out.data<uint8_t>(), pool);
  return out;
}

void matmul_with_fresh_pack(const Tensor& x, const Tensor& w, const Tensor& y, ThreadPool& pool) {
  const MatmulArgs a{int32_t(x.dim(0)), int32_t(w.dim(0)), int32_t(w.dim(1)), int32_t(w.dtype)};
  std::vector<uint8_t> pack;
  uint8_t* p = nullptr;
  if (cpu::matmul_wants_pack(a)) {
    pack.resize(cpu::matmul_pack_bytes(a) + 64);
    p = reinterpret_cast<uint8_t*>((uintptr_t(pack.data()) + 63) & ~uintptr_t(63));
    cpu::matmul_pack_weight(a, w.data<uint8_t>(), p, pool);
  }
  cpu::matmul(a, x.data<float>(), w.data<uint8_t>(), y.data<float>(), pool, p);
}

}  // namespace eyas::ops
