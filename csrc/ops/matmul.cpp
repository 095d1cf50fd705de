#include "ops/matmul.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <tuple>

#include "cpu/matmul.h"

namespace eyas::ops {

// Repacked weights (cpu::matmul_pack_weight: Q4_0/Q4_1 in the AMX kernels' tile order), built at a
// weight's first call on an ISA that reads them and kept while the weight's buffer lives. Keyed by
// Buffer::id() (never reused within a process) and the view; entries of dead buffers are dropped
// at the next insertion. Weights are not written after their first matmul (loaders fill them
// before); as a guard against a buffer refilled in place, a hit also compares the first and last
// 64 bytes of the view with the ones packed, and repacks on a difference.
namespace {

struct Pack {
  std::weak_ptr<Buffer> buffer;
  std::shared_ptr<uint8_t> bytes;
  uint8_t head[64], tail[64];
  size_t edge;  // bytes compared at each end
};

using PackKey = std::tuple<uint64_t, size_t, int32_t, int32_t, int32_t>;  // buffer id, offset, type, N, K

std::mutex pack_mu;
std::map<PackKey, Pack> packs;

bool same_edges(const Pack& p, const uint8_t* w, size_t nbytes) {
  return std::memcmp(p.head, w, p.edge) == 0 && std::memcmp(p.tail, w + nbytes - p.edge, p.edge) == 0;
}

std::shared_ptr<uint8_t> weight_pack(const MatmulArgs& a, const Tensor& w, ThreadPool& pool) {
  const uint8_t* wd = w.data<uint8_t>();
  const size_t nbytes = w.nbytes();
  const PackKey key{w.buffer->id(), w.offset, a.wtype, a.n, a.k};
  {
    std::lock_guard<std::mutex> lock(pack_mu);
    auto it = packs.find(key);
    if (it != packs.end() && same_edges(it->second, wd, nbytes)) return it->second.bytes;
  }
  Pack p;  // built outside the lock: other threads' matmuls go on meanwhile
  p.buffer = w.buffer;
  p.bytes.reset(static_cast<uint8_t*>(std::aligned_alloc(64, (cpu::matmul_pack_bytes(a) + 63) / 64 * 64)), std::free);
  if (!p.bytes) throw std::bad_alloc();
  cpu::matmul_pack_weight(a, wd, p.bytes.get(), pool);
  p.edge = std::min<size_t>(64, nbytes);
  std::memcpy(p.head, wd, p.edge);
  std::memcpy(p.tail, wd + nbytes - p.edge, p.edge);
  std::lock_guard<std::mutex> lock(pack_mu);
  for (auto it = packs.begin(); it != packs.end();) it = it->second.buffer.expired() ? packs.erase(it) : std::next(it);
  packs[key] = p;
  return p.bytes;
}

}  // namespace

bool matmul_supports(DType t) {
  switch (t) {
    case DType::F32: case DType::F16: case DType::BF16: case DType::Q8_0: case DType::Q4_0:
    case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q4_K: case DType::Q5_K:
    case DType::Q6_K: return true;
    default: return false;
  }
}

static bool overlaps(const Tensor& a, const Tensor& b) {
  const char* pa = a.data<char>();
  const char* pb = b.data<char>();
  return pa < pb + b.nbytes() && pb < pa + a.nbytes();
}

void matmul(Encoder& enc, const Tensor& x, const Tensor& w, const Tensor& y) {
  const char* op = "matmul";
  check_dtype(op, "x", x, DType::F32);
  check_dtype(op, "y", y, DType::F32);
  check_ndim(op, "x", x, 2);
  check_ndim(op, "y", y, 2);
  if (!w.defined()) fail(op, "w is missing");
  if (!matmul_supports(w.dtype)) fail(op, "unsupported weight type " + w.describe());
  check_ndim(op, "w", w, 2);
  const int64_t T = x.dim(0), K = x.dim(1), N = w.dim(0);
  if (T < 1) fail(op, "x must have at least one row, got " + x.describe());
  if (K < 1 || N < 1) fail(op, "empty weight " + w.describe() + " or x " + x.describe());
  check_dim(op, "w", w, 1, K);
  const int be = type_traits(w.dtype).block_elems;
  if (K % be != 0)
    fail(op, "K=" + std::to_string(K) + " is not a multiple of the " + type_traits(w.dtype).name + " block size " +
                 std::to_string(be));
  check_dim(op, "y", y, 0, T);
  check_dim(op, "y", y, 1, N);
  if (T > INT32_MAX || N > INT32_MAX || K > INT32_MAX) fail(op, "dimensions must fit in int32");
  for (const Tensor* t : {&x, &w, &y})
    if (t->offset + t->nbytes() > t->buffer->size()) fail(op, t->describe() + " is larger than its buffer");
  check_writable(op, "y", y);
  if (overlaps(y, x) || overlaps(y, w)) fail(op, "y must not overlap x or w");
  MatmulArgs a{int32_t(T), int32_t(N), int32_t(K), int32_t(w.dtype)};
  enc.dispatch(op, {&x, &w}, {&y}, [a, x, w, y](ThreadPool& pool) {
    // Looked up when the dispatch runs, so the pack sees the weight bytes as they are then.
    const std::shared_ptr<uint8_t> pack = cpu::matmul_wants_pack(a) ? weight_pack(a, w, pool) : nullptr;
    cpu::matmul(a, x.data<float>(), w.data<uint8_t>(), y.data<float>(), pool, pack.get());
  });
}

}  // namespace eyas::ops
