// Bindings for the quantized matmul and embedding, the weight type enum (_core.DType) and the
// instruction-set debug hook used by the invariance tests.
#include <climits>

#include "bindings/convert.h"
#include "bindings/registry.h"
#include "ops/cpu_controls.h"
#include "ops/embedding.h"
#include "ops/host_rows.h"
#include "ops/matmul.h"

// Accepts a _core.DType, a plain int (GGML type id) or a name such as "Q4_1".
static DType weight_type(const char* op, nb::handle h) {
  if (nb::isinstance<nb::str>(h)) {
    std::string name = nb::cast<std::string>(h);
    for (int32_t id : {0, 1, 2, 3, 6, 7, 8, 12, 13, 14, 30})
      if (name == type_traits(DType(id)).name) return DType(id);
    fail(op, "unknown weight type name '" + name + "'");
  }
  int32_t id;
  try {
    id = nb::cast<int32_t>(nb::int_(h));
  } catch (const std::exception&) {
    fail(op, "w_type must be a DType, an int or a type name");
  }
  DType t;
  try {
    t = dtype_from_int(id);
  } catch (const std::invalid_argument&) {
    fail(op, "unsupported weight type id " + std::to_string(id));
  }
  if (!ops::matmul_supports(t)) fail(op, std::string("unsupported weight type ") + type_traits(t).name);
  return t;
}

static std::vector<int64_t> weight_shape(const char* op, const std::vector<int64_t>& shape, DType t) {
  if (shape.size() != 2) fail(op, "w_shape must be (rows, cols)");
  for (int64_t d : shape)
    if (d < 1) fail(op, "w_shape dims must be positive");
  const int be = type_traits(t).block_elems;
  if (shape[1] % be != 0)
    fail(op, "K=" + std::to_string(shape[1]) + " is not a multiple of the " + type_traits(t).name + " block size " +
                 std::to_string(be));
  return shape;
}

EYAS_BINDINGS(ops_matmul) {
  if (!nb::type<DType>().is_valid()) {
    nb::enum_<DType>(m, "DType", nb::is_arithmetic(), "Element and weight types; ids equal GGML's type ids.")
        .value("F32", DType::F32).value("F16", DType::F16).value("Q4_0", DType::Q4_0).value("Q4_1", DType::Q4_1)
        .value("Q5_0", DType::Q5_0).value("Q5_1", DType::Q5_1).value("Q8_0", DType::Q8_0).value("Q4_K", DType::Q4_K)
        .value("Q5_K", DType::Q5_K).value("Q6_K", DType::Q6_K).value("I8", DType::I8).value("I16", DType::I16)
        .value("I32", DType::I32).value("I64", DType::I64).value("BF16", DType::BF16).value("U8", DType::U8);
  }
  nb::module_ ops = bind::ops_module(m);
  ops.def(
      "matmul",
      [](bind::Array x, bind::Array w_bytes, nb::handle w_type, std::vector<int64_t> w_shape,
         std::optional<bind::Array> out, std::optional<Encoder*> encoder) {
        const char* op = "matmul";
        Tensor tx = bind::from_numpy(op, "x", x);
        if (tx.ndim() != 2) fail(op, "x must be 2-D [T, K], got " + tx.describe());
        const DType wt = weight_type(op, w_type);
        Tensor tw = bind::from_bytes(op, "w", w_bytes, wt, weight_shape(op, w_shape, wt));
        Tensor ty = out ? bind::from_numpy(op, "out", *out) : Tensor::empty(DType::F32, {tx.dim(0), tw.dim(0)});
        bind::encode(encoder, [&](Encoder& enc) { ops::matmul(enc, tx, tw, ty); });
        return bind::to_numpy(ty);
      },
      "x"_a, "w_bytes"_a, "w_type"_a, "w_shape"_a, nb::kw_only(), "out"_a = nb::none(), "encoder"_a = nb::none(),
      "y = x @ w.T. x: float32[T, K]; w_bytes: uint8 raw GGUF data of a [N, K] tensor of type w_type "
      "(DType, GGML id or name); returns float32[T, N].");
  ops.def(
      "embedding",
      [](bind::Array w_bytes, nb::handle w_type, std::vector<int64_t> w_shape, bind::Array ids,
         std::optional<bind::Array> out, std::optional<Encoder*> encoder) {
        const char* op = "embedding";
        const DType wt = weight_type(op, w_type);
        Tensor tw = bind::from_bytes(op, "w", w_bytes, wt, weight_shape(op, w_shape, wt));
        Tensor ti = bind::from_numpy(op, "ids", ids);
        if (ti.ndim() != 1) fail(op, "ids must be 1-D, got " + ti.describe());
        Tensor ty = out ? bind::from_numpy(op, "out", *out) : Tensor::empty(DType::F32, {ti.dim(0), tw.dim(1)});
        bind::encode(encoder, [&](Encoder& enc) { ops::embedding(enc, tw, ti, ty); });
        return bind::to_numpy(ty);
      },
      "w_bytes"_a, "w_type"_a, "w_shape"_a, "ids"_a, nb::kw_only(), "out"_a = nb::none(), "encoder"_a = nb::none(),
      "Rows w[ids] dequantized to float32[T, K]. ids: int32[T].");
  ops.def(
      "requantize_q4_0",
      [](bind::Array w_bytes, nb::handle w_type, std::vector<int64_t> w_shape) {
        const char* op = "requantize_q4_0";
        const DType wt = weight_type(op, w_type);
        Tensor tw = bind::from_bytes(op, "w", w_bytes, wt, weight_shape(op, w_shape, wt));
        return bind::to_numpy(ops::requantize_q4_0_host(op, tw));
      },
      "w_bytes"_a, "w_type"_a, "w_shape"_a,
      "Every row of an [N, K] weight (raw GGUF data of type w_type) dequantized and quantized to Q4_0 as GGUF "
      "rounds it: uint8 [N, K / 32 * 18]. The draft head's scoring copy (DrafterSpec::rescore_rows).");
  ops.def(
      "_q4_pack",
      [](bind::Array w_bytes, nb::handle w_type, std::vector<int64_t> w_shape) {
        const char* op = "q4_pack";
        const DType wt = weight_type(op, w_type);
        if (wt != DType::Q4_0 && wt != DType::Q4_1 && wt != DType::Q5_0 && wt != DType::Q5_1 && wt != DType::Q8_0)
          fail(op, "only Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 weights are repacked");
        Tensor tw = bind::from_bytes(op, "w", w_bytes, wt, weight_shape(op, w_shape, wt));
        if (tw.dim(0) > INT32_MAX || tw.dim(1) > INT32_MAX) fail(op, "dimensions must fit in int32");
        return bind::to_numpy(ops::repacked_weight(tw));
      },
      "w_bytes"_a, "w_type"_a, "w_shape"_a,
      "Test hook: the repack of Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 weights the VNNI and AMX kernels read (uint8, "
      "288 / 320 / 352 / 384 bytes (Q4_0 / Q4_1 / Q5_0 / Q5_1) or 544 (Q8_0) per 16 rows x 32-block; rows past "
      "N // 16 * 16 are left out).");
  ops.def(
      "_matmul_with_pack",
      [](bind::Array x, bind::Array w_bytes, nb::handle w_type, std::vector<int64_t> w_shape) {
        const char* op = "matmul";
        Tensor tx = bind::from_numpy(op, "x", x);
        const DType wt = weight_type(op, w_type);
        Tensor tw = bind::from_bytes(op, "w", w_bytes, wt, weight_shape(op, w_shape, wt));
        if (tx.ndim() != 2 || tx.dtype != DType::F32 || tx.dim(1) != tw.dim(1)) fail(op, "x must be float32[T, K]");
        if (tx.dim(0) > INT32_MAX || tw.dim(0) > INT32_MAX || tw.dim(1) > INT32_MAX) fail(op, "dimensions must fit in int32");
        Tensor ty = Tensor::empty(DType::F32, {tx.dim(0), tw.dim(0)});
        ops::matmul_with_fresh_pack(tx, tw, ty, bind::default_device()->pool());
        return bind::to_numpy(ty);
      },
      "x"_a, "w_bytes"_a, "w_type"_a, "w_shape"_a,
      "Test hook: matmul with the weight repacked for this call whenever the ISA's kernels read a "
      "repack (ops.matmul keeps one per weight buffer, built on a Q8_0 weight's second call).");
  ops.def("_weight_packs_built", &ops::weight_packs_built, "Test hook: repacked weights built so far.");
  ops.def("_embedding_rows_from_packs", &ops::embedding_rows_from_packs,
          "Test hook: token embedding rows read from a tied head's repack so far (instead of the file's pages).");
  ops.def("_live_weight_packs", &ops::live_weight_packs,
          "Test hook: how many repacked weights are alive (each is freed with its weight's buffer).");
  ops.def("_allow_gfni", &ops::allow_gfni, "on"_a,
          "Testing knob: the K-quant kernels' GFNI unpack where the CPU has it (default on); off runs the unpack "
          "without it. Both give the same bits.");
  ops.def("_gfni_in_use", &ops::gfni_in_use, "Whether the K-quant kernels use their GFNI unpack now.");
  ops.def("set_isa", &ops::set_matmul_isa, "name"_a,
          "Debug hook: force the matmul instruction set ('scalar', 'avx2', 'avx512', 'amx' or 'best').");
  ops.def("get_isa", &ops::matmul_isa);
  ops.def("available_isas", &ops::available_matmul_isas, "Instruction sets usable on this CPU, slowest first.");
}
