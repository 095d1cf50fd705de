#include "ops/matmul.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "cpu/matmul.h"

namespace eyas::ops {

// Repacked weights (cpu::matmul_pack_weight: Q4_0/Q4_1 in the AMX kernels' tile order, Q8_0 for
// VNNI at T <= the table's q8pack_max_rows), built at a weight's first call on an ISA that reads them (a Q8_0 weight's second:
// see weight_pack) and stored in the weight's Buffer (derived data), so a pack lives exactly as long
// as its weight. Weights are not written after their first matmul
// (loaders fill them before); as a guard against a buffer refilled in place, a hit also compares
// the first and last 64 bytes of the view with the ones packed, and repacks on a difference.
namespace {

std::atomic<int64_t> live_packs{0}, packs_built{0};

struct Pack {
  std::unique_ptr<uint8_t, decltype(&std::free)> bytes{nullptr, std::free};
  uint8_t head[64], tail[64];
  size_t edge;  // bytes compared at each end
  Pack() { ++live_packs; }
  ~Pack() { --live_packs; }
};

bool same_edges(const Pack& p, const uint8_t* w, size_t nbytes) {
  return std::memcmp(p.head, w, p.edge) == 0 && std::memcmp(p.tail, w + nbytes - p.edge, p.edge) == 0;
}

// The pack for weight view `w`, built on a miss. The shared_ptr keeps it alive for this call even if
// another thread replaces it meanwhile.
std::shared_ptr<const Pack> weight_pack(const MatmulArgs& a, const Tensor& w, ThreadPool& pool) {
  const uint8_t* wd = w.data<uint8_t>();
  const size_t nbytes = w.nbytes();
  const Buffer::DerivedKey key{int64_t(w.offset), a.wtype, a.n, a.k};
  if (auto hit = std::static_pointer_cast<const Pack>(w.buffer->derived(key)); hit && same_edges(*hit, wd, nbytes))
    return hit;
  // Building a Q8_0 pack reads and writes the whole weight (~30 ms for the default lm_head) for a
  // 1.5-2x faster call of a few rows (~5x at T = 32 on the AVX-512 table): pack on the second call
  // into the same buffer, so weights wrapped for a single call (op-level calls, accept_hidden's
  // head) never pay for one.
  if (DType(a.wtype) == DType::Q8_0) {
    const Buffer::DerivedKey seen{int64_t(w.offset), -a.wtype, a.n, a.k};
    if (!w.buffer->derived(seen)) {
      w.buffer->set_derived(seen, std::make_shared<int>(1));
      return nullptr;
    }
  }
  auto p = std::make_shared<Pack>();  // built without a lock: other threads' matmuls go on meanwhile
  p->bytes.reset(static_cast<uint8_t*>(std::aligned_alloc(64, (cpu::matmul_pack_bytes(a) + 63) / 64 * 64)));
  if (!p->bytes) throw std::bad_alloc();
  cpu::matmul_pack_weight(a, wd, p->bytes.get(), pool);
  ++packs_built;
  p->edge = std::min<size_t>(64, nbytes);
  std::memcpy(p->head, wd, p->edge);
  std::memcpy(p->tail, wd + nbytes - p->edge, p->edge);
  w.buffer->set_derived(key, p);
  return p;
}

}  // namespace

int64_t live_weight_packs() { return live_packs.load(); }
int64_t weight_packs_built() { return packs_built.load(); }

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
    const std::shared_ptr<const Pack> pack = cpu::matmul_wants_pack(a) ? weight_pack(a, w, pool) : nullptr;
    cpu::matmul(a, x.data<float>(), w.data<uint8_t>(), y.data<float>(), pool, pack ? pack->bytes.get() : nullptr);
  });
}

}  // namespace eyas::ops
