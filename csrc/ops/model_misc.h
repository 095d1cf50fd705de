// Small data-movement ops the Transformer needs between kernels: column-block copies (aux
// capture, splitting gated q) and a per-row sigmoid gate (MoE shared expert).
#pragma once
#include "core/encoder.h"

namespace eyas::ops {

// x: F32[R, Nx]; y: F32[R, Ny]. y[r, y_col + c] = x[r, x_col + c] for c < n; other columns of y
// are left as they are.
void copy_cols(Encoder& enc, const Tensor& x, int x_col, const Tensor& y, int y_col, int n);
// x, y: F32[R, N] (y may alias x); g: F32[R, 1]. y[r, :] = x[r, :] * sigmoid(g[r]).
void sigmoid_scale_rows(Encoder& enc, const Tensor& x, const Tensor& g, const Tensor& y);

}  // namespace eyas::ops
