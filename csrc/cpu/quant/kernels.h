// Kernel tables of the quantized matmul, one per instruction set. Every table computes the same
// bits: activations are quantized per block, each block's dot product is an exact integer, and
// the per-block float terms are added in block order (see dot_generic.h for the definition).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cpu/quant/formats.h"

namespace eyas::cpu::quant {

enum class Isa : int { Scalar = 0, Avx2 = 1, Avx512 = 2, Amx = 3, Neon = 4 };

// Activation rows quantized for one call. Legacy types (32-blocks): qs[T,K], d[T,K/32] and
// sums s[T,K/32]. K-quants (256-blocks): qs[T,K], d[T,K/256], per-16 sums s[T,K/16].
struct ActRows {
  const float* x = nullptr;  // F32[T,K], the raw activations (float weight types use these)
  int8_t* qs = nullptr;
  float* d = nullptr;
  int32_t* s = nullptr;
  int64_t k = 0;
  int64_t d_per_row = 0, s_per_row = 0;
};

// One matmul call: y[T,N] = x[T,K] . w[N,K]^T.
struct Job {
  const uint8_t* w;  // [N] rows of `wrow` bytes in GGUF block layout
  size_t wrow;
  int64_t t, n, k;
  ActRows act;
  float* y;                     // F32[T,N]
  const void* extra = nullptr;  // per-call data a table's `prepare` built (AMX tile layouts)
  const uint8_t* wpack = nullptr;  // q4pack.h layout of w (when matmul_wants_pack, see Table)
};

// Computes y[:, n0:n1] for every row t.
using ColsFn = void (*)(const Job& job, int64_t n0, int64_t n1);
// Quantizes activation rows [r0, r1) of job.act (block of 32 or 256 by `kind`).
using QuantFn = void (*)(const ActRows& act, int64_t r0, int64_t r1);

// Optional once-per-call step after quantization (single thread); may set job.extra.
using PrepareFn = void (*)(Job& job, WKind kind);

struct Table {
  Isa isa;
  QuantFn quant32, quant256;
  ColsFn cols[kNumKinds];
  PrepareFn prepare = nullptr;
  // Q4_0/Q4_1 calls with at least this many rows read job.wpack (0: the table never does).
  int64_t q4pack_min_rows = 0;
  // Q8_0 calls with at most this many rows read job.wpack (0: the table never does).
  int64_t q8pack_max_rows = 0;
  // Q4_K / Q5_K / Q6_K calls read job.wpack at every T (false: the table never does).
  bool kpack = false;
  // Q5_0 / Q5_1 calls read job.wpack at every T (false: the table never does).
  bool q5pack = false;
};

const Table& table_scalar();
const Table* table_avx2();    // nullptr when not compiled for this architecture
const Table* table_avx512();
const Table* table_amx();
const Table* table_neon();   // AArch64 with the dot-product extension

bool is_k_quant(WKind k);
int block_elems(WKind k);

}  // namespace eyas::cpu::quant
