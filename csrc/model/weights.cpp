#include "model/weights.h"

#include <atomic>
#include <cstring>

#include "core/page_out.h"
#include "ops/matmul.h"

namespace eyas::model {

static std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

Tensor take(const WeightMap& w, const std::string& name, std::vector<int64_t> shape, bool float_only, bool required) {
  const char* op = "Transformer";
  auto it = w.find(name);
  if (it == w.end()) {
    if (required) fail(op, "missing weight '" + name + "' " + shape_str(shape));
    return Tensor{};
  }
  Tensor t = it->second;
  if (t.shape != shape)
    fail(op, "weight '" + name + "' has shape " + shape_str(t.shape) + ", expected " + shape_str(shape));
  if (float_only ? t.dtype != DType::F32 : !ops::matmul_supports(t.dtype))
    fail(op, "weight '" + name + "' has unsupported dtype " + type_traits(t.dtype).name +
                 (float_only ? " (norms and biases must be F32)" : ""));
  if (!t.buffer || t.offset + t.nbytes() > t.buffer->size())
    fail(op, "weight '" + name + "' " + t.describe() + " is larger than its buffer");
  return t;
}

static std::atomic<int64_t> copied_bytes{0};

int64_t fused_copy_bytes() { return copied_bytes.load(); }

Tensor concat_rows(const std::vector<const Tensor*>& parts) {
  std::vector<int64_t> shape = parts[0]->shape;
  shape[0] = 0;
  for (const Tensor* p : parts) shape[0] += p->dim(0);
  // Parts that already lie back to back in memory, in this order (a GGUF file often stores
  // ffn_gate just before ffn_up), are their concatenation: one buffer over them, no copy.
  bool adjacent = true, read_only = parts[0]->buffer->read_only();
  auto parts_alive = std::make_shared<std::vector<BufferPtr>>();
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0)
      adjacent = adjacent && parts[i]->dtype == parts[0]->dtype &&
                 parts[i]->buffer->device() == parts[0]->buffer->device() &&
                 parts[i]->data<uint8_t>() == parts[i - 1]->data<uint8_t>() + parts[i - 1]->nbytes();
    read_only = read_only && parts[i]->buffer->read_only();
    parts_alive->push_back(parts[i]->buffer);
  }
  if (adjacent) {
    Tensor view;
    view.dtype = parts[0]->dtype;
    view.shape = shape;
    view.buffer = Buffer::wrap(parts[0]->data<uint8_t>(), view.nbytes(), parts_alive, read_only,
                               parts[0]->buffer->device());
    return view;
  }
  Tensor out = Tensor::empty(parts[0]->dtype, shape);
  copied_bytes += int64_t(out.nbytes());
  size_t off = 0;
  for (const Tensor* p : parts) {
    std::memcpy(out.data<uint8_t>() + off, p->data<uint8_t>(), p->nbytes());
    off += p->nbytes();
    // The layer reads the copy from now on: a mapped file's part need not stay resident.
    if (p->buffer->read_only()) page_out(p->data<uint8_t>(), p->nbytes());
  }
  return out;
}

}  // namespace eyas::model
