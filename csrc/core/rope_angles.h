// The one definition of a RoPE angle's cos and sin, shared by every backend so that rotations
// agree bit for bit: angle = float(pos) * inv_freq in float32 (as Hugging Face computes it),
// cos/sin evaluated in double and rounded once. GPUs have no double, so the Metal backend
// computes these on the host and its kernel reads them.
#pragma once
#include <cmath>
#include <cstdint>

namespace eyas {

inline void rope_cos_sin(int32_t pos, float inv_freq, float* cos_out, float* sin_out) {
  const float angle = float(pos) * inv_freq;
  *cos_out = float(std::cos(double(angle)));
  *sin_out = float(std::sin(double(angle)));
}

}  // namespace eyas
