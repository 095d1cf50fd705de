// Metal implementations of the op families: argument structs, kernel names and dispatch
// geometry (kernel_names.h). Inputs are validated by csrc/ops before these run. Plain C++.
// Not yet reachable from csrc/ops: the Metal issue wraps these in an ops::Backend
// (csrc/metal/backend.cpp, see csrc/ops/backend.h) that records on the device's encoder, and
// ops::registered_backend returns it for DeviceKind::Metal when EYAS_HAS_METAL is defined.
#pragma once
#include "core/tensor.h"
#include "metal/encoder.h"

namespace eyas::metal {

// Shapes as the CPU ops in csrc/ops/*.h.
void rms_norm(Encoder& enc, const Tensor& x, const Tensor& w, const Tensor& y, float eps);
void rope(Encoder& enc, const Tensor& x, const Tensor& positions, const Tensor& inv_freq, int rot_dim, int style,
          const Tensor& y);
// op: "add" | "silu_mul" | "sigmoid_mul" (b required) or "scale" (b undefined, s used).
void elementwise(Encoder& enc, const char* op, const Tensor& a, const Tensor& b, float s, const Tensor& y);
void softmax(Encoder& enc, const Tensor& x, float temperature, bool log, const Tensor& y);
void argmax(Encoder& enc, const Tensor& x, const Tensor& idx);
void topk(Encoder& enc, const Tensor& x, int k, const Tensor& values, const Tensor& idx);
// mask undefined = causal.
void attention(Encoder& enc, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int prefix_len,
               const Tensor& mask, float scale, const Tensor& o);
void kv_write(Encoder& enc, const Tensor& kv_new, const Tensor& cache, int start_slot);
void kv_move_rows(Encoder& enc, const Tensor& cache, const Tensor& src_slots, int dst_start);
// w: raw GGUF rows of `wtype` (GGML id), [n, k]; scratch: I8 holding at least
// matmul_scratch_bytes(wtype, T, k) bytes for the quantized activations.
void matmul(Encoder& enc, const Tensor& x, const Tensor& w, int wtype, int n, int k, const Tensor& scratch,
            const Tensor& y);
size_t matmul_scratch_bytes(int wtype, int64_t rows, int64_t k);
void embedding(Encoder& enc, const Tensor& w, int wtype, int vocab, int k, const Tensor& ids, const Tensor& y);

}  // namespace eyas::metal
