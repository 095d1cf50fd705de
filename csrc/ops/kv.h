#pragma once
#include "core/encoder.h"

namespace eyas::ops {

// kv_new: F32[T, Hkv, D]; cache: F32[Hkv, cap, D]. Copies row t of each head into slot start_slot + t.
void kv_write(Encoder& enc, const Tensor& kv_new, const Tensor& cache, int start_slot);
// cache: F32[Hkv, cap, D]; src_slots: I32[m] in [0, cap). Moves slot src_slots[i] to slot dst_start + i
// byte for byte in every head, as if all sources were read first (overlap is safe: commit of a tree path).
void kv_move_rows(Encoder& enc, const Tensor& cache, const Tensor& src_slots, int dst_start);

}  // namespace eyas::ops
