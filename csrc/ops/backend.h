// The backend seam. Each op in csrc/ops validates its arguments, builds its kernel argument struct,
// then calls backend_for(...).<op>(...): the backend of the encoder's device records the work.
// Entry points trust their arguments (the op checked them); each records on `enc` the dispatches
// the op needs, declaring the tensors they read and write. Nothing above csrc/ops sees a backend.
//
// Backends: the CPU backend (csrc/cpu/backend.cpp) and the Metal backend (csrc/metal/backend.cpp,
// portable C++ that plans launches for the device's driver). Metal on Apple Silicon shares memory
// with the CPU, so a Metal encoder takes CPU memory too (numpy arrays, mapped weights) with no
// copy; a CPU encoder never takes Metal memory.
#pragma once
#include <initializer_list>
#include <vector>

#include "core/encoder.h"
#include "metal/kernel_args.h"
#include "ops/attention_call.h"

namespace eyas::ops {

// Sizes of a Gated DeltaNet layer (ops/gdn.h): key heads, key head dim, value heads, value head dim.
struct GdnDims {
  int32_t hk = 0, dk = 0, hv = 0, dv = 0;
  float l2_eps = 1e-6f;  // q/k l2-norm: x / sqrt(sum x^2 + l2_eps)
  // Value head h reads key head h / (Hv/Hk) (transformers' grouped order) or, tiled, h % Hk
  // (llama.cpp's GGUF order, whose converter moves value heads so that ggml can broadcast q/k).
  bool tiled = false;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // Shapes and semantics: the op of the same name in csrc/ops/<family>.h.
  virtual void rms_norm(Encoder& enc, const RmsNormArgs& a, const Tensor& x, const Tensor& w, const Tensor& y) = 0;
  virtual void rope(Encoder& enc, const RopeArgs& a, const Tensor& x, const Tensor& positions,
                    const Tensor& inv_freq, const Tensor& y) = 0;
  virtual void add(Encoder& enc, const ElementwiseArgs& a, const Tensor& x, const Tensor& b, const Tensor& y) = 0;
  virtual void silu_mul(Encoder& enc, const ElementwiseArgs& a, const Tensor& gate, const Tensor& up,
                        const Tensor& y) = 0;
  virtual void sigmoid_mul(Encoder& enc, const ElementwiseArgs& a, const Tensor& x, const Tensor& g,
                           const Tensor& y) = 0;
  virtual void scale(Encoder& enc, const ElementwiseArgs& a, const Tensor& x, const Tensor& y) = 0;
  virtual void softmax(Encoder& enc, const SoftmaxArgs& a, const Tensor& x, const Tensor& y) = 0;
  virtual void argmax(Encoder& enc, const TopkArgs& a, const Tensor& x, const Tensor& idx) = 0;
  virtual void topk(Encoder& enc, const TopkArgs& a, const Tensor& x, const Tensor& values, const Tensor& idx) = 0;
  // mask: Tensor{} when causal (a.causal == 1).
  virtual void attention(Encoder& enc, const AttentionArgs& a, const Tensor& q, const Tensor& k_cache,
                         const Tensor& v_cache, const Tensor& mask, const Tensor& o) = 0;
  // args[i] for calls[i] (ops/attention.h); by default one attention() per call.
  virtual void attention_many(Encoder& enc, const std::vector<AttentionArgs>& args,
                              const std::vector<AttentionCall>& calls) {
    for (size_t i = 0; i < calls.size(); ++i)
      attention(enc, args[i], calls[i].q, calls[i].k_cache, calls[i].v_cache, calls[i].mask, calls[i].o);
  }
  virtual void kv_write(Encoder& enc, const KvCopyArgs& a, const Tensor& kv_new, const Tensor& cache) = 0;
  // src_slots may be written by an earlier dispatch: their range is checked when the work runs.
  virtual void kv_move_rows(Encoder& enc, const KvCopyArgs& a, const Tensor& cache, const Tensor& src_slots) = 0;
  // A backend may keep data derived from a weight (a repack) with the weight's Buffer.
  virtual void matmul(Encoder& enc, const MatmulArgs& a, const Tensor& x, const Tensor& w, const Tensor& y) = 0;
  virtual void embedding(Encoder& enc, const EmbeddingArgs& a, const Tensor& w, const Tensor& ids,
                         const Tensor& y) = 0;
  virtual void copy_cols(Encoder& enc, const Tensor& x, int x_col, const Tensor& y, int y_col, int n) = 0;
  virtual void sigmoid_scale_rows(Encoder& enc, const Tensor& x, const Tensor& g, const Tensor& y) = 0;
  virtual void moe_route(Encoder& enc, const Tensor& logits, int top_k, bool norm, const Tensor& idx,
                         const Tensor& w) = 0;
  virtual void moe_ffn(Encoder& enc, const Tensor& x, const Tensor& logits, const Tensor& gate_exps,
                       const Tensor& up_exps, const Tensor& down_exps, int top_k, bool norm, const Tensor& y) = 0;
  // Gated DeltaNet (ops/gdn.h); undefined optional tensors are Tensor{}.
  virtual void gdn_conv(Encoder& enc, const Tensor& u, const Tensor& parents, const Tensor& conv_state,
                        const Tensor& w, const Tensor& y) = 0;
  virtual void gdn_conv_state(Encoder& enc, const Tensor& conv_in, const Tensor& u, const Tensor& nodes, int m,
                              const Tensor& conv_out) = 0;
  virtual void gdn_core(Encoder& enc, const GdnDims& d, const Tensor& qkv, const Tensor& a, const Tensor& b,
                        const Tensor& A, const Tensor& dt_bias, const Tensor& nodes, const Tensor& parents,
                        const Tensor& state_in, const Tensor& state_out, const Tensor& o) = 0;
};

// The backend this build has for `kind`, or nullptr.
Backend* registered_backend(DeviceKind kind);
// Defined by csrc/cpu/backend.cpp and csrc/metal/backend.cpp.
Backend& cpu_backend();
Backend& metal_backend();

// The backend of enc's device, after checking that every defined tensor's buffer is memory that
// device can use; throws std::invalid_argument "[op] ..." on a mismatch or when the device cannot
// run (a Metal device with no driver). No allocation: a decode step calls it ~450 times.
Backend& backend_for(const char* op, Encoder& enc, std::initializer_list<const Tensor*> tensors);

}  // namespace eyas::ops
