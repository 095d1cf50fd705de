// Embedding gather: y[t] = dequantize(w[ids[t]]) with the CPU's exact operations (quant.h).
// Grid (ceil(K / tg), T); one thread per output element. Out-of-range ids give NaN rows, as
// the CPU kernel does (the op layer rejects them before dispatch).
#include <metal_stdlib>
#include "common.h"
#include "kernel_args.h"
#include "quant.h"
using namespace metal;

template <typename Q, int BE>
kernel void embedding_q(constant EmbeddingArgs& a [[buffer(0)]],
                        device const uchar* w [[buffer(1)]],   // [V] rows of K / BE blocks
                        device const int* ids [[buffer(2)]],   // [T]
                        device float* y [[buffer(3)]],         // [T, K]
                        uint2 pos [[thread_position_in_grid]]) {
  const uint e = pos.x, t = pos.y;
  if (e >= uint(a.k) || t >= uint(a.rows)) return;
  const int id = ids[t];
  if (id < 0 || id >= a.vocab) {
    y[ulong(t) * a.k + e] = NAN;
    return;
  }
  const device Q* row = (const device Q*)(w + ulong(id) * (a.k / BE) * sizeof(Q));
  y[ulong(t) * a.k + e] = deq(row[e / BE], int(e % BE));
}

template <typename W>
kernel void embedding_f(constant EmbeddingArgs& a [[buffer(0)]],
                        device const W* w [[buffer(1)]],      // [V, K]
                        device const int* ids [[buffer(2)]],  // [T]
                        device float* y [[buffer(3)]],        // [T, K]
                        uint2 pos [[thread_position_in_grid]]) {
  const uint e = pos.x, t = pos.y;
  if (e >= uint(a.k) || t >= uint(a.rows)) return;
  const int id = ids[t];
  y[ulong(t) * a.k + e] = id < 0 || id >= a.vocab ? NAN : wload(w, ulong(id) * a.k + e);
}

template [[host_name("embedding_f32")]] kernel decltype(embedding_f<float>) embedding_f<float>;
template [[host_name("embedding_f16")]] kernel decltype(embedding_f<half>) embedding_f<half>;
template [[host_name("embedding_bf16")]] kernel decltype(embedding_f<ushort>) embedding_f<ushort>;
template [[host_name("embedding_q8_0")]] kernel decltype(embedding_q<block_q8_0, 32>) embedding_q<block_q8_0, 32>;
template [[host_name("embedding_q4_0")]] kernel decltype(embedding_q<block_q4_0, 32>) embedding_q<block_q4_0, 32>;
template [[host_name("embedding_q4_1")]] kernel decltype(embedding_q<block_q4_1, 32>) embedding_q<block_q4_1, 32>;
template [[host_name("embedding_q5_0")]] kernel decltype(embedding_q<block_q5_0, 32>) embedding_q<block_q5_0, 32>;
template [[host_name("embedding_q5_1")]] kernel decltype(embedding_q<block_q5_1, 32>) embedding_q<block_q5_1, 32>;
template [[host_name("embedding_q4_K")]] kernel decltype(embedding_q<block_q4_K, 256>) embedding_q<block_q4_K, 256>;
template [[host_name("embedding_q5_K")]] kernel decltype(embedding_q<block_q5_K, 256>) embedding_q<block_q5_K, 256>;
template [[host_name("embedding_q6_K")]] kernel decltype(embedding_q<block_q6_K, 256>) embedding_q<block_q6_K, 256>;
