#include "cpu/weight_pack.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <tuple>

#include "core/huge_pages.h"
#include "core/page_out.h"
#include "cpu/matmul.h"
#include "ops/cpu_controls.h"

namespace eyas {

// Repacked weights (matmul_pack_weight: Q4_0/Q4_1 in the AMX kernels' tile order, Q5_0/Q5_1 and the
// K-quants for VNNI, Q8_0 for VNNI at T <= the table's q8pack_max_rows; layouts in q4pack.h), built at a weight's first call on an ISA that reads them (a
// Q8_0 weight's second: see weight_pack) and stored in the weight's Buffer (derived data), so a pack
// lives exactly as long as its weight. Weights are not written after their first matmul (loaders
// fill them before); as a guard against a buffer refilled in place, a hit also compares the first
// and last 64 bytes of the view with the ones packed, and repacks on a difference.
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

// Packs by the address of the bytes they were built from, so another Buffer over the same bytes (a drafter
// sharing the target's tied embedding, wrapped on its own) finds the one its owner built. Weak: a pack still
// lives and dies with the buffer that owns it.
using PackSite = std::tuple<const uint8_t*, int32_t, int64_t, int64_t>;  // bytes, wtype, n, k
std::mutex sites_mutex;
std::map<PackSite, std::weak_ptr<const Pack>> sites;

void remember_site(const PackSite& site, const std::shared_ptr<const Pack>& p) {
  std::lock_guard<std::mutex> lock(sites_mutex);
  for (auto it = sites.begin(); it != sites.end();) it = it->second.expired() ? sites.erase(it) : std::next(it);
  sites[site] = p;
}

std::shared_ptr<const Pack> pack_at_site(const PackSite& site) {
  std::lock_guard<std::mutex> lock(sites_mutex);
  auto it = sites.find(site);
  return it == sites.end() ? nullptr : it->second.lock();
}

// The pack `w`'s buffer keeps under `key` ({offset, wtype, n, k}; with other_buffers: or one built through
// another Buffer over the same bytes), if its edges still match the weight's.
std::shared_ptr<const Pack> cached_pack(const Tensor& w, const Buffer::DerivedKey& key, bool other_buffers = false) {
  auto hit = std::static_pointer_cast<const Pack>(w.buffer->derived(key));
  if (!hit && other_buffers) hit = pack_at_site({w.data<uint8_t>(), int32_t(key[1]), key[2], key[3]});
  return hit && same_edges(*hit, w.data<uint8_t>(), w.nbytes()) ? hit : nullptr;
}

// The repack bytes, sharing ownership of the whole Pack.
std::shared_ptr<const uint8_t> bytes_of(std::shared_ptr<const Pack> p) {
  const uint8_t* b = p->bytes.get();
  return std::shared_ptr<const uint8_t>(std::move(p), b);
}

}  // namespace

std::shared_ptr<const uint8_t> cpu::weight_pack(const MatmulArgs& a, const Tensor& w, ThreadPool& pool) {
  if (!matmul_wants_pack(a)) return nullptr;
  const uint8_t* wd = w.data<uint8_t>();
  const size_t nbytes = w.nbytes();
  const Buffer::DerivedKey key{int64_t(w.offset), a.wtype, a.n, a.k};
  if (auto hit = cached_pack(w, key)) return bytes_of(std::move(hit));
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
  p->bytes.reset(static_cast<uint8_t*>(alloc_streamed(matmul_pack_bytes(a))));
  if (!p->bytes) throw std::bad_alloc();
  matmul_pack_weight(a, wd, p->bytes.get(), pool);
  ++packs_built;
  p->edge = std::min<size_t>(64, nbytes);
  std::memcpy(p->head, wd, p->edge);
  std::memcpy(p->tail, wd + nbytes - p->edge, p->edge);
  w.buffer->set_derived(key, p);
  remember_site({wd, a.wtype, a.n, a.k}, p);
  // Matmuls read the pack from now on (the weight only at its edges, and rows past the last
  // 16-row group): a mapped file's bytes need not stay resident beside it.
  if (w.buffer->read_only()) page_out(wd, nbytes);
  return bytes_of(std::move(p));
}

std::shared_ptr<const uint8_t> cpu::existing_weight_pack(const Tensor& w, int32_t wtype, int64_t n, int64_t k) {
  if (!w.buffer || n < 16) return nullptr;
  auto hit = cached_pack(w, {int64_t(w.offset), wtype, n, k}, /*other_buffers=*/true);
  return hit ? bytes_of(std::move(hit)) : nullptr;
}

// Declared with the op (csrc/ops/matmul.h); the CPU backend is the one that repacks weights.
int64_t ops::live_weight_packs() { return live_packs.load(); }
int64_t ops::weight_packs_built() { return packs_built.load(); }

}  // namespace eyas
