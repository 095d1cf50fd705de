#pragma once
#include <cstdint>

#include "core/encoder.h"

namespace eyas::ops {

// NeoX rotates the two halves of the rotary part; Interleaved (GPT-J) rotates adjacent pairs.
enum class RopeStyle : int32_t { NeoX = 0, Interleaved = 1 };

// x, y: F32[T, H, D] (y may alias x); positions: I32[T]; inv_freq: F32[rot_dim/2] (any rope scaling
// is folded into this table by the caller). Dims [rot_dim, D) pass through unchanged.
void rope(Encoder& enc, const Tensor& x, const Tensor& positions, const Tensor& inv_freq, int rot_dim,
          RopeStyle style, const Tensor& y);

}  // namespace eyas::ops
