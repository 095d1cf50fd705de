// The target model: a decoder-only Transformer (Llama / Qwen2 / Qwen3 / Qwen3-MoE, optional
// gated attention output) over a KV cache. forward() runs T new tokens after the committed
// prefix, either causally (prefill / decode) or as a draft tree under a mask; commit() keeps
// the accepted rows. See docs/model_spec.md for the contract with the Python loaders.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/encoder.h"
#include "model/kv_cache.h"
#include "model/spec.h"

namespace eyas::model {

// Argmax: the last row's greedy token (first index of the maximum, NaN ignored, as spec::accept
// picks it) without handing the logits back: plain greedy decoding needs nothing else.
enum class LogitsMode { Last, All, None, Argmax };

struct ForwardResult {
  Tensor logits;       // F32[T or 1, V]; undefined for LogitsMode::None and Argmax
  Tensor aux;          // F32[T, len(aux_layers) * H] when aux capture was asked for
  int32_t argmax = -1;  // LogitsMode::Argmax
};

struct ForwardInput {
  const int32_t* tokens = nullptr;  // [T]
  int T = 0;
  const uint8_t* mask = nullptr;    // [T, T] row-major, or null = causal
  const int32_t* depths = nullptr;  // [T]; with a mask, positions are length + depths[i]
  LogitsMode logits = LogitsMode::Last;
  bool capture_aux = false;
};

class Transformer {
 public:
  // chunk: rows per prefill step; results do not depend on it (batch-invariant kernels).
  // fuse: concatenate q/k/v and gate/up weights of one type into one matmul each (fewer
  // dispatches per token; same bits, since every output column is its own dot product).
  // kv_dtype: F32, or F16 (the KV cache in half precision: half the bytes per token of context).
  Transformer(ModelSpec spec, WeightMap weights, int max_context, std::vector<int> aux_layers,
              std::shared_ptr<Device> device, int chunk = 256, bool fuse = true, DType kv_dtype = DType::F32);

  ForwardResult forward(const ForwardInput& in);
  // nodes: indices into the last forward's rows (strictly increasing); keeps them at length..length+m.
  void commit(const std::vector<int32_t>& nodes);
  void truncate(int n);
  void reset();

  int length() const { return cache_.length(); }
  int capacity() const { return cache_.capacity(); }
  DType kv_dtype() const { return cache_.dtype(); }
  int pending() const { return cache_.pending(); }
  const ModelSpec& spec() const { return spec_; }
  const std::vector<int>& aux_layers() const { return aux_layers_; }
  Device& device() { return *device_; }

 private:
  struct Layer {
    Tensor attn_norm, wq, wk, wv, bq, bk, bv, q_norm, k_norm, wo, ffn_norm;
    Tensor wqkv, bqkv;                                             // fused q|k|v (optional)
    Tensor gate, up, down;                                         // dense FFN
    Tensor wgu;                                                    // fused gate|up (optional)
    bool moe = false;
    Tensor router, gate_exps, up_exps, down_exps;                  // MoE
    Tensor gate_shexp, up_shexp, down_shexp, gate_inp_shexp;       // shared expert (optional)
  };
  struct Scratch {
    int rows = 0;
    Tensor last_logits, last_argmax;  // LogitsMode::Argmax: F32[1, V], I32[1], reused every step
    Tensor ids, pos, x, xn, qkv, gu, qf, q, gate_q, k, v, o, proj, ff_gate, ff_up, router, sh_gate, sh_up, sh_out, sh_g;
  };

  void load(WeightMap& w, bool fuse);
  void ensure_scratch(int rows);
  void validate_input(const ForwardInput& in, std::vector<int32_t>& positions) const;
  // Views of the scratch rows for one chunk of t rows, built once per chunk and shared by every
  // layer (building them per layer was a measurable share of a decode step's host time).
  struct Views {
    int t = 0;
    Tensor x, xn, proj, qf, q, gate_q, k, v, o, qkv, gu, g, u, pos;
    Tensor q3, k3, v3, o3, q_flat, k_flat, qf_heads, q_heads, gate_heads;  // reshaped
    Tensor qk3;  // one row of a fused q|k|v: q and k heads side by side, rotated by one dispatch
    Tensor router, sh_gate, sh_up, sh_out, sh_g;
  };
  Views make_views(Encoder& enc, int t) const;
  void encode_layer(Encoder& enc, const Views& w, int l, int slot0, int prefix, const Tensor& mask);

  ModelSpec spec_;
  std::shared_ptr<Device> device_;
  std::vector<int> aux_layers_;
  int chunk_;
  Tensor embd_, out_norm_, out_w_, inv_freq_;
  std::vector<Layer> layers_;
  KVCache cache_;
  Scratch s_;
  Encoder enc_;  // reused by every forward/commit: its arrays keep their capacity between steps
  std::mutex mutex_;  // forward/commit run without the GIL; one call at a time
};

}  // namespace eyas::model
