// Rotary position embedding arguments (included from metal/kernel_args.h).
#pragma once

struct RopeArgs {
  EYAS_I32 tokens;    // T rows of x
  EYAS_I32 heads;     // H heads per row
  EYAS_I32 head_dim;  // D elements per head
  EYAS_I32 rot_dim;   // rotated leading dims (even, <= D); the rest pass through
  EYAS_I32 style;     // 0 = NeoX (halves), 1 = interleaved (pairs)
};
