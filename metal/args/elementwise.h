// Elementwise op arguments (included from metal/kernel_args.h).
#pragma once

struct ElementwiseArgs {
  EYAS_I32 rows;       // rows of the output
  EYAS_I32 cols;       // elements per row
  EYAS_I32 broadcast;  // 1: the second input is one row shared by every output row
  float s;             // scale factor (scale op only)
  EYAS_I32 in_stride;  // silu_mul: elements from one input row to the next (0: cols, rows back to back)
};
