// The Metal backend: each entry point plans GPU launches (kernel, argument struct, bindings,
// grid) and records them on the encoder, which places barriers from the bindings and hands them
// to the device's driver (Apple's API or the MSL emulator). Ops with no Metal kernel yet run as
// host steps: the CPU backend's closure, run once every earlier launch has completed, on the
// same memory (Apple Silicon's memory is shared). Arguments were validated by the op (csrc/ops).
#include "ops/backend.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/rope_angles.h"
#include "metal/kernel_args.h"
#include "metal/kernel_names.h"

namespace eyas::metal {
namespace {

using gpu::Access;
using gpu::Launch;

uint32_t ceil_div(int64_t a, int64_t b) { return uint32_t((a + b - 1) / b); }

template <typename Args>
std::vector<uint8_t> bytes_of(const Args& a) {
  std::vector<uint8_t> v(sizeof a);
  std::memcpy(v.data(), &a, sizeof a);
  return v;
}

gpu::Binding in(uint32_t i, const Tensor& t) { return {i, t, Access::Read}; }
gpu::Binding out(uint32_t i, const Tensor& t) { return {i, t, Access::Write}; }
gpu::Binding inout(uint32_t i, const Tensor& t) { return {i, t, Access::ReadWrite}; }

// Bytes [offset, offset + n) of t as a U8 view (sub-ranges of one scratch allocation).
Tensor byte_view(const Tensor& t, size_t offset, size_t n) {
  Tensor v = t;
  v.dtype = DType::U8;
  v.offset = t.offset + offset;
  v.shape = {int64_t(n)};
  return v;
}

// Threads per threadgroup for a row-reduction kernel: kRowThreads unless the pipeline allows fewer.
uint32_t row_threads(Encoder& enc, const std::string& kernel) {
  return std::min<uint32_t>(kRowThreads, enc.device().driver()->max_threads(kernel));
}

void launch(Encoder& enc, std::string kernel, std::vector<uint8_t> args, std::vector<gpu::Binding> bindings,
            std::array<uint32_t, 3> grid, std::array<uint32_t, 3> tg, std::vector<uint32_t> tg_mem = {}) {
  enc.launch(Launch{std::move(kernel), std::move(args), std::move(bindings), grid, tg, std::move(tg_mem)});
}

// Runs `fn` on the host now when t's contents are final, else as a host step when the work runs.
template <typename Fn>
void on_host_when_ready(Encoder& enc, const char* name, const Tensor& t, std::initializer_list<const Tensor*> writes,
                        Fn fn) {
  if (!enc.writes_pending(t)) return fn();
  enc.dispatch(name, {&t}, writes, [fn](ThreadPool&) { fn(); });
}

class MetalBackend final : public ops::Backend {
 public:
  void rms_norm(Encoder& enc, const RmsNormArgs& a, const Tensor& x, const Tensor& w, const Tensor& y) override {
    const std::string k = "rms_norm_f32";
    launch(enc, k, bytes_of(a), {in(1, x), in(2, w), out(3, y)}, {uint32_t(a.rows), 1, 1},
           {row_threads(enc, k), 1, 1});
  }

  void rope(Encoder& enc, const RopeArgs& a, const Tensor& x, const Tensor& positions, const Tensor& inv_freq,
            const Tensor& y) override {
    // (cos, sin) per token and rotated pair, computed on the host as the CPU op computes them.
    Tensor cs = Tensor::empty(DType::F32, {int64_t(a.tokens), int64_t(a.rot_dim)});
    on_host_when_ready(enc, "rope_angles", positions, {&cs}, [a, positions, inv_freq, cs] {
      const int32_t* pos = positions.data<int32_t>();
      const float* f = inv_freq.data<float>();
      float* out = cs.data<float>();
      for (int t = 0; t < a.tokens; ++t)
        for (int k = 0; k < a.rot_dim / 2; ++k) {
          float* p = out + (int64_t(t) * a.rot_dim + 2 * k);
          rope_cos_sin(pos[t], f[k], p, p + 1);
        }
    });
    launch(enc, "rope_f32", bytes_of(a), {in(1, x), in(2, cs), out(3, y)}, {uint32_t(a.heads), uint32_t(a.tokens), 1},
           {32, 1, 1});
  }

  void add(Encoder& enc, const ElementwiseArgs& a, const Tensor& x, const Tensor& b, const Tensor& y) override {
    elementwise(enc, "add_f32", a, &x, &b, y);
  }
  void silu_mul(Encoder& enc, const ElementwiseArgs& a, const Tensor& gate, const Tensor& up,
                const Tensor& y) override {
    elementwise(enc, "silu_mul_f32", a, &gate, &up, y);
  }
  void sigmoid_mul(Encoder& enc, const ElementwiseArgs& a, const Tensor& x, const Tensor& g,
                   const Tensor& y) override {
    elementwise(enc, "sigmoid_mul_f32", a, &x, &g, y);
  }
  void scale(Encoder& enc, const ElementwiseArgs& a, const Tensor& x, const Tensor& y) override {
    elementwise(enc, "scale_f32", a, &x, nullptr, y);
  }

  void softmax(Encoder& enc, const SoftmaxArgs& a, const Tensor& x, const Tensor& y) override {
    row_kernel(enc, "softmax_f32", bytes_of(a), a.rows, {in(1, x), out(2, y)});
  }
  void argmax(Encoder& enc, const TopkArgs& a, const Tensor& x, const Tensor& idx) override {
    row_kernel(enc, "argmax_f32", bytes_of(a), a.rows, {in(1, x), out(2, idx)});
  }
  void topk(Encoder& enc, const TopkArgs& a, const Tensor& x, const Tensor& values, const Tensor& idx) override {
    row_kernel(enc, "topk_f32", bytes_of(a), a.rows, {in(1, x), out(2, values), out(3, idx)});
  }

  void attention(Encoder& enc, const AttentionArgs& a, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                 const Tensor& mask, const Tensor& o) override {
    if (mask.defined() && a.n_new > kAttnMaxNew)
      fail("attention", "metal: at most " + std::to_string(kAttnMaxNew) + " masked new slots per call, got " +
                            std::to_string(a.n_new));
    if (a.head_dim > 256) fail("attention", "metal: head_dim " + std::to_string(a.head_dim) + " > 256");
    const std::string k = attention_kernel(a.head_dim, k_cache.dtype == DType::F16);
    // A causal call binds q in the mask slot: the kernel never reads it then.
    launch(enc, k, bytes_of(a), {in(1, q), in(2, k_cache), in(3, v_cache), in(4, mask.defined() ? mask : q), out(5, o)},
           {uint32_t(a.n_heads), uint32_t(a.n_q), 1}, {row_threads(enc, k), 1, 1});
  }

  void kv_write(Encoder& enc, const KvCopyArgs& a, const Tensor& kv_new, const Tensor& cache) override {
    // Only the destination slots are written; the cache is bound whole (the hazard is conservative).
    launch(enc, cache.dtype == DType::F16 ? "kv_write_f16" : "kv_write_f32", bytes_of(a), {in(1, kv_new), inout(2, cache)},
           {ceil_div(a.head_dim, 32), uint32_t(a.n_kv_heads), uint32_t(a.rows)}, {32, 1, 1});
  }

  void kv_move_rows(Encoder& enc, const KvCopyArgs& a, const Tensor& cache, const Tensor& src_slots) override {
    // The kernel stages every source row of a strip in threadgroup memory (all reads before any
    // write) and cannot report a bad slot. So slots are checked on the host first; slots still
    // being computed, or more rows than fit, make the whole move a host step (which checks too).
    if (a.rows > kMoveMaxRows || enc.writes_pending(src_slots))
      return ops::cpu_backend().kv_move_rows(enc, a, cache, src_slots);
    const int32_t* s = src_slots.data<int32_t>();
    for (int i = 0; i < a.rows; ++i)
      if (s[i] < 0 || s[i] >= a.capacity)
        fail("kv_move_rows", "src_slots[" + std::to_string(i) + "] = " + std::to_string(s[i]) +
                                 " is outside the cache capacity " + std::to_string(a.capacity));
    launch(enc, cache.dtype == DType::F16 ? "kv_move_rows_f16" : "kv_move_rows_f32", bytes_of(a),
           {in(1, src_slots), inout(2, cache)}, {ceil_div(a.head_dim, 32), uint32_t(a.n_kv_heads), 1},
           {32, uint32_t(std::min(a.rows, 8)), 1}, {uint32_t(a.rows) * 128u});
  }

  void matmul(Encoder& enc, const MatmulArgs& a, const Tensor& x, const Tensor& w, const Tensor& y) override {
    const int64_t t = a.rows, k = a.k;
    const int forced = enc.device().driver()->hooks.matmul_variant;
    const bool vec = forced ? forced == 1 : t <= kVecMaxRows;
    const std::string name = matmul_kernel(a.wtype, vec);
    const std::array<uint32_t, 3> mat_grid{ceil_div(a.n, kMatTileX), ceil_div(t, kMatTileY), 1},
        mat_tg{kMatTileX, kMatTileY, 1}, vec_tg{32 * kVecSimdgroups, 1, 1};
    const int be = act_block(a.wtype);
    if (be == 0) {  // float weights read the activations directly
      const std::array<uint32_t, 3> grid = vec ? std::array<uint32_t, 3>{ceil_div(a.n, 2 * kVecSimdgroups), uint32_t(t), 1}
                                               : mat_grid;
      return launch(enc, name, bytes_of(a), {in(1, w), in(2, x), out(3, y)}, grid, vec ? vec_tg : mat_tg);
    }
    // Activations quantized to Q8 blocks first: qs [T, K] int8 | d [T, K/be] | s [T, K/32 or K/16].
    const size_t qs_bytes = size_t(t * k), d_bytes = size_t(t * (k / be) * 4),
                 s_bytes = size_t(t * (be == 256 ? k / 16 : k / 32) * 4);
    Tensor scratch = Tensor::empty(DType::U8, {int64_t(qs_bytes + d_bytes + s_bytes)});
    const Tensor qs = byte_view(scratch, 0, qs_bytes), d = byte_view(scratch, qs_bytes, d_bytes),
                 s = byte_view(scratch, qs_bytes + d_bytes, s_bytes);
    launch(enc, be == 256 ? "quantize_q8_256" : "quantize_q8_32", bytes_of(a), {in(1, x), out(2, qs), out(3, d), out(4, s)},
           {uint32_t(k / be), uint32_t(t), 1}, {uint32_t(be), 1, 1});
    const std::array<uint32_t, 3> grid = vec ? std::array<uint32_t, 3>{ceil_div(a.n, kVecSimdgroups), uint32_t(t), 1}
                                             : mat_grid;
    launch(enc, name, bytes_of(a), {in(1, w), in(2, qs), in(3, d), in(4, s), out(5, y)}, grid, vec ? vec_tg : mat_tg);
  }

  void embedding(Encoder& enc, const EmbeddingArgs& a, const Tensor& w, const Tensor& ids, const Tensor& y) override {
    launch(enc, std::string("embedding_") + wtype_suffix(a.wtype), bytes_of(a), {in(1, w), in(2, ids), out(3, y)},
           {ceil_div(a.k, kFlatThreads), uint32_t(a.rows), 1}, {kFlatThreads, 1, 1});
  }

  // Host steps (no Metal kernel yet; docs/metal.md lists them).
  void copy_cols(Encoder& enc, const Tensor& x, int x_col, const Tensor& y, int y_col, int n) override {
    ops::cpu_backend().copy_cols(enc, x, x_col, y, y_col, n);
  }
  void sigmoid_scale_rows(Encoder& enc, const Tensor& x, const Tensor& g, const Tensor& y) override {
    ops::cpu_backend().sigmoid_scale_rows(enc, x, g, y);
  }
  void moe_route(Encoder& enc, const Tensor& logits, int top_k, bool norm, const Tensor& idx,
                 const Tensor& w) override {
    ops::cpu_backend().moe_route(enc, logits, top_k, norm, idx, w);
  }
  void moe_ffn(Encoder& enc, const Tensor& x, const Tensor& logits, const Tensor& gate_exps, const Tensor& up_exps,
               const Tensor& down_exps, int top_k, bool norm, const Tensor& y) override {
    ops::cpu_backend().moe_ffn(enc, x, logits, gate_exps, up_exps, down_exps, top_k, norm, y);
  }
  void gdn_conv(Encoder& enc, const Tensor& u, const Tensor& parents, const Tensor& conv_state, const Tensor& w,
                const Tensor& y) override {
    ops::cpu_backend().gdn_conv(enc, u, parents, conv_state, w, y);
  }
  void gdn_conv_state(Encoder& enc, const Tensor& conv_in, const Tensor& u, const Tensor& nodes, int m,
                      const Tensor& conv_out) override {
    ops::cpu_backend().gdn_conv_state(enc, conv_in, u, nodes, m, conv_out);
  }
  void gdn_core(Encoder& enc, const ops::GdnDims& d, const Tensor& qkv, const Tensor& a, const Tensor& b,
                const Tensor& A, const Tensor& dt_bias, const Tensor& nodes, const Tensor& parents,
                const Tensor& state_in, const Tensor& state_out, const Tensor& o) override {
    ops::cpu_backend().gdn_core(enc, d, qkv, a, b, A, dt_bias, nodes, parents, state_in, state_out, o);
  }

 private:
  static void elementwise(Encoder& enc, const char* kernel, const ElementwiseArgs& a, const Tensor* x,
                          const Tensor* b, const Tensor& y) {
    const int64_t n = int64_t(a.rows) * a.cols;
    std::vector<gpu::Binding> bind{in(1, *x)};
    if (b) bind.push_back(in(2, *b));
    bind.push_back(out(b ? 3 : 2, y));
    launch(enc, kernel, bytes_of(a), std::move(bind), {ceil_div(n, kFlatThreads), 1, 1}, {kFlatThreads, 1, 1});
  }

  static void row_kernel(Encoder& enc, const char* kernel, std::vector<uint8_t> args, int rows,
                         std::vector<gpu::Binding> bind) {
    launch(enc, kernel, std::move(args), std::move(bind), {uint32_t(rows), 1, 1}, {row_threads(enc, kernel), 1, 1});
  }
};

}  // namespace
}  // namespace eyas::metal

eyas::ops::Backend& eyas::ops::metal_backend() {
  static metal::MetalBackend backend;
  return backend;
}
