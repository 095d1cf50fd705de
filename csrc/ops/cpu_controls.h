// Debug and test controls of the CPU backend, for the bindings. Declared at the ops level so that
// nothing above csrc/ops includes csrc/cpu; defined in csrc/cpu/controls.cpp.
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace eyas::ops {

// The quantized matmul's instruction set: "scalar", "avx2", "avx512", "amx", "neon", or "best" for
// the best this CPU runs (the EYAS_ISA variable sets it at start). Every set gives the same bits.
// Throws std::invalid_argument "[set_isa] ..." for an unknown name or one this CPU cannot run.
void set_matmul_isa(const std::string& name);
std::string matmul_isa();
std::vector<std::string> available_matmul_isas();  // usable on this CPU, slowest first
// The K-quant kernels' GFNI unpack where the CPU has it (the default); off runs the unpack without it.
// Both give the same bits. gfni_in_use: whether the kernels use it now.
void allow_gfni(bool on);
bool gfni_in_use();

// Runs the rope/elementwise/softmax/top-k/attention kernels and the F16 KV write on their scalar
// paths, to prove they give the SIMD paths' bits.
void force_scalar_kernels(bool on);
// The same family capped at a SIMD level: "scalar", "avx2", "avx512" (the default: the best the CPU
// runs). Throws std::invalid_argument "[simd] ..." for another name.
void cap_simd_kernels(const std::string& level);
std::vector<std::string> available_simd_levels();  // usable on this CPU, slowest first

// Test hooks on the matmul's weight repack; the caller has checked the arguments.
// w: Q4_0, Q4_1 or Q8_0 [N, K] -> U8[bytes], the repack the VNNI and AMX kernels read.
Tensor repacked_weight(const Tensor& w);
// x: F32[T, K]; w: [N, K] of any matmul type; y: F32[T, N] = x . w^T, computed now on `pool` with w
// repacked for this call alone whenever the instruction set reads a repack (no cache involved).
void matmul_with_fresh_pack(const Tensor& x, const Tensor& w, const Tensor& y, ThreadPool& pool);

// Repacked weights alive in this process (packs must die with their buffers), and repacks built
// since the process started.
int64_t live_weight_packs();
int64_t weight_packs_built();
// Token embedding rows read back from a tied head's repack instead of the table's file pages, since the
// process started.
int64_t embedding_rows_from_packs();

}  // namespace eyas::ops
