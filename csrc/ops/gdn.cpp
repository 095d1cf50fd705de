#include "ops/gdn.h"

#include <string>

namespace eyas::ops {

namespace {

void check_f32_2d(const char* op, const char* name, const Tensor& t) {
  check_dtype(op, name, t, DType::F32);
  check_ndim(op, name, t, 2);
}

// parents: I32[m] with parents[j] in [-1, j) (read on the host: the states fill them there).
void check_parents(const char* op, const Tensor& parents, int64_t m) {
  check_dtype(op, "parents", parents, DType::I32);
  check_ndim(op, "parents", parents, 1);
  check_dim(op, "parents", parents, 0, m);
  const int32_t* p = parents.data<int32_t>();
  for (int64_t j = 0; j < m; ++j)
    if (p[j] < -1 || p[j] >= j)
      fail(op, "parents[" + std::to_string(j) + "] = " + std::to_string(p[j]) + " must be in [-1, " +
                   std::to_string(j) + ")");
}

// nodes: I32[m] with values in [0, n); undefined = rows 0..m-1 (then m <= n).
void check_nodes(const char* op, const Tensor& nodes, int64_t m, int64_t n) {
  if (!nodes.defined()) {
    if (m > n) fail(op, std::to_string(m) + " nodes but only " + std::to_string(n) + " input rows");
    return;
  }
  check_dtype(op, "nodes", nodes, DType::I32);
  check_ndim(op, "nodes", nodes, 1);
  check_dim(op, "nodes", nodes, 0, m);
  const int32_t* p = nodes.data<int32_t>();
  for (int64_t j = 0; j < m; ++j)
    if (p[j] < 0 || p[j] >= n)
      fail(op, "nodes[" + std::to_string(j) + "] = " + std::to_string(p[j]) + " is outside [0, " +
                   std::to_string(n) + ")");
}

}  // namespace

void gdn_conv(Encoder& enc, const Tensor& u, const Tensor& parents, const Tensor& conv_state, const Tensor& w,
              const Tensor& y) {
  const char* op = "gdn_conv";
  check_f32_2d(op, "u", u);
  check_f32_2d(op, "w", w);
  check_f32_2d(op, "conv_state", conv_state);
  check_f32_2d(op, "y", y);
  check_writable(op, "y", y);
  const int64_t T = u.dim(0), C = u.dim(1), K = w.dim(1);
  if (K < 2) fail(op, "w must have a kernel of >= 2 taps, got " + w.describe());
  check_dim(op, "w", w, 0, C);
  check_dim(op, "conv_state", conv_state, 0, K - 1);
  check_dim(op, "conv_state", conv_state, 1, C);
  if (y.shape != u.shape) fail(op, "y " + y.describe() + " must match u " + u.describe());
  check_parents(op, parents, T);
  Backend& backend = backend_for(op, enc, {&u, &parents, &conv_state, &w, &y});
  if (T == 0) return;
  backend.gdn_conv(enc, u, parents, conv_state, w, y);
}

void gdn_conv_state(Encoder& enc, const Tensor& conv_in, const Tensor& u, const Tensor& nodes, const Tensor& conv_out) {
  const char* op = "gdn_conv_state";
  check_f32_2d(op, "conv_in", conv_in);
  check_f32_2d(op, "u", u);
  check_f32_2d(op, "conv_out", conv_out);
  check_writable(op, "conv_out", conv_out);
  if (conv_out.shape != conv_in.shape)
    fail(op, "conv_out " + conv_out.describe() + " must match conv_in " + conv_in.describe());
  check_dim(op, "u", u, 1, conv_in.dim(1));
  const int64_t m = nodes.defined() ? (nodes.ndim() == 1 ? nodes.dim(0) : -1) : u.dim(0);
  if (m < 0) fail(op, "nodes must be 1-D, got " + nodes.describe());
  check_nodes(op, nodes, m, u.dim(0));
  Backend& backend = backend_for(op, enc, {&conv_in, &u, &nodes, &conv_out});
  if (conv_in.numel() == 0) return;
  backend.gdn_conv_state(enc, conv_in, u, nodes, int(m), conv_out);
}

void gdn_core(Encoder& enc, const GdnDims& d, const Tensor& qkv, const Tensor& a, const Tensor& b, const Tensor& A,
              const Tensor& dt_bias, const Tensor& nodes, const Tensor& parents, const Tensor& state_in,
              const Tensor& state_out, const Tensor& o) {
  const char* op = "gdn_core";
  if (d.hk < 1 || d.dk < 1 || d.hv < 1 || d.dv < 1 || d.hv % d.hk != 0)
    fail(op, "head counts and dims must be >= 1 with value heads a multiple of key heads, got Hk=" +
                 std::to_string(d.hk) + " Dk=" + std::to_string(d.dk) + " Hv=" + std::to_string(d.hv) +
                 " Dv=" + std::to_string(d.dv));
  if (!(d.l2_eps >= 0.0f)) fail(op, "l2_eps must be >= 0");
  check_f32_2d(op, "qkv", qkv);
  check_f32_2d(op, "a", a);
  check_f32_2d(op, "b", b);
  check_f32_2d(op, "o", o);
  check_writable(op, "o", o);
  const int64_t N = qkv.dim(0), m = o.dim(0);
  check_dim(op, "qkv", qkv, 1, 2 * int64_t(d.hk) * d.dk + int64_t(d.hv) * d.dv);
  for (const auto& [name, t] : {std::pair{"a", &a}, std::pair{"b", &b}}) {
    check_dim(op, name, *t, 0, N);
    check_dim(op, name, *t, 1, d.hv);
  }
  for (const auto& [name, t] : {std::pair{"A", &A}, std::pair{"dt_bias", &dt_bias}}) {
    check_dtype(op, name, *t, DType::F32);
    check_ndim(op, name, *t, 1);
    check_dim(op, name, *t, 0, d.hv);
  }
  check_dim(op, "o", o, 1, int64_t(d.hv) * d.dv);
  check_nodes(op, nodes, m, N);
  check_parents(op, parents, m);
  const std::vector<int64_t> state_shape{d.hv, d.dk, d.dv};
  check_dtype(op, "state_in", state_in, DType::F32);
  if (state_in.shape != state_shape) fail(op, "state_in " + state_in.describe() + " must be [Hv, Dk, Dv]");
  if (state_out.defined()) {
    check_dtype(op, "state_out", state_out, DType::F32);
    check_writable(op, "state_out", state_out);
    if (state_out.shape != state_shape) fail(op, "state_out " + state_out.describe() + " must be [Hv, Dk, Dv]");
    const int32_t* p = parents.data<int32_t>();
    for (int64_t j = 0; j < m; ++j)
      if (p[j] != j - 1)
        fail(op, "state_out needs a chain (parents[j] = j - 1); parents[" + std::to_string(j) +
                     "] = " + std::to_string(p[j]));
  }
  Backend& backend = backend_for(op, enc, {&qkv, &a, &b, &A, &dt_bias, &nodes, &parents, &state_in, &state_out, &o});
  if (m == 0) return;
  backend.gdn_core(enc, d, qkv, a, b, A, dt_bias, nodes, parents, state_in, state_out, o);
}

}  // namespace eyas::ops
