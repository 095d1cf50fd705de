// Every kernel name the Metal backend can request, and the dispatch geometry its planners use
// (csrc/metal/backend.cpp). tests/test_metal_names.py checks each name is a [[host_name]] in
// metal/*.metal and back. Plain C++: no Metal types.
#pragma once
#include <cstdint>
#include <string>

namespace eyas::metal {

inline constexpr const char* kKernelNames[] = {
    "rms_norm_f32",
    "rope_f32",
    "add_f32",
    "silu_mul_f32",
    "sigmoid_mul_f32",
    "scale_f32",
    "softmax_f32",
    "argmax_f32",
    "topk_f32",
    "attention_f32_d64",
    "attention_f32_d128",
    "attention_f32_d256",
    "attention_f16_d64",
    "attention_f16_d128",
    "attention_f16_d256",
    "kv_write_f32",
    "kv_write_f16",
    "kv_move_rows_f32",
    "kv_move_rows_f16",
    "quantize_q8_32",
    "quantize_q8_256",
    "matmul_f32_vec", "matmul_f32_mat",
    "matmul_f16_vec", "matmul_f16_mat",
    "matmul_bf16_vec", "matmul_bf16_mat",
    "matmul_q8_0_vec", "matmul_q8_0_mat",
    "matmul_q4_0_vec", "matmul_q4_0_mat",
    "matmul_q4_1_vec", "matmul_q4_1_mat",
    "matmul_q5_0_vec", "matmul_q5_0_mat",
    "matmul_q5_1_vec", "matmul_q5_1_mat",
    "matmul_q4_K_vec", "matmul_q4_K_mat",
    "matmul_q5_K_vec", "matmul_q5_K_mat",
    "matmul_q6_K_vec", "matmul_q6_K_mat",
    "embedding_f32",
    "embedding_f16",
    "embedding_bf16",
    "embedding_q8_0",
    "embedding_q4_0",
    "embedding_q4_1",
    "embedding_q5_0",
    "embedding_q5_1",
    "embedding_q4_K",
    "embedding_q5_K",
    "embedding_q6_K",
};

// Dispatch geometry.
constexpr int kRowThreads = 256;        // rms_norm, softmax, argmax, top-k, attention, quantize_q8_256
constexpr int kFlatThreads = 256;       // elementwise, embedding
constexpr int kVecSimdgroups = 4;       // matmul *_vec: columns per threadgroup (x2 for float weights)
constexpr int kMatTileX = 32, kMatTileY = 4;  // matmul *_mat: (columns, rows) per threadgroup
constexpr int kVecMaxRows = 4;          // matmul: T <= this uses *_vec, larger T uses *_mat
constexpr int kMoveMaxRows = 256;       // kv_move_rows: rows * 128 B of threadgroup memory <= 32 KiB
constexpr int kAttnMaxNew = 2048;       // attention with a mask: new slots per call

// GGML type id -> kernel suffix ("" when Metal has no kernel for it).
inline const char* wtype_suffix(int32_t ggml_type) {
  switch (ggml_type) {
    case 0: return "f32";
    case 1: return "f16";
    case 30: return "bf16";
    case 8: return "q8_0";
    case 2: return "q4_0";
    case 3: return "q4_1";
    case 6: return "q5_0";
    case 7: return "q5_1";
    case 12: return "q4_K";
    case 13: return "q5_K";
    case 14: return "q6_K";
    default: return "";
  }
}

// vec: the simdgroup-per-column variant (T <= kVecMaxRows by default), else the tiled one.
inline std::string matmul_kernel(int32_t ggml_type, bool vec) {
  return std::string("matmul_") + wtype_suffix(ggml_type) + (vec ? "_vec" : "_mat");
}
// kv_f16: the KV cache holds half (CPU: kv_dtype="f16").
inline std::string attention_kernel(int head_dim, bool kv_f16 = false) {
  return std::string(kv_f16 ? "attention_f16" : "attention_f32") +
         (head_dim <= 64 ? "_d64" : head_dim <= 128 ? "_d128" : "_d256");
}
// Block size of the Q8 activation quantization a weight type needs (0: float weights).
inline int act_block(int32_t ggml_type) {
  switch (ggml_type) {
    case 0: case 1: case 30: return 0;
    case 12: case 13: case 14: return 256;
    default: return 32;
  }
}

}  // namespace eyas::metal
