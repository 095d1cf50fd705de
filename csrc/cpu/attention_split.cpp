// A decode step or a small tree verify over a long context is bound by reading K and V. The tile path
// splits work by (kv head, part of its heads), so with 3 kv heads on 2 threads both threads read one
// kv head in full and the work divides 4:5. Here the scores over the shared prefix are split by keys
// and the weighted V sums by columns, so each thread reads half of every row, once, for all the
// (query, head) items of its kv head. Three passes: shared scores; each item's own keys, softmax
// numerators and sum; V sums. Every item runs the reduction of attention.cpp in the same order, with
// the same blocks, so the bits equal the tile path's.
#include "cpu/attention_split.h"

#include <algorithm>
#include <vector>

#include "cpu/attention_blocks.h"

namespace eyas::cpu {

#if EYAS_X86
namespace {

using namespace attn;

constexpr int kMinSharedKeys = 512;  // below, the two extra passes cost more than the split saves
constexpr int kMaxQueries = 15;      // from 16 queries attention() converts an F16 cache once instead
constexpr int kChunk = 256;          // keys per unit of the scores pass
// The scores pass requests V into L2 only while a thread's share of it fits there with room to spare:
// beyond, the early rows are evicted before the V pass (16/8 heads, D = 128, 2,048 keys: 4 MB of V,
// slower hot and no faster cold).
constexpr int64_t kMaxPrefetchedV = int64_t(1) << 20;  // bytes per thread

struct SplitScratch {
  std::vector<float> scores;   // [n_q * H][stride], by item (query i, head h): i * H + h
  std::vector<float> acc;      // [n_q * H][2][D]
  std::vector<int32_t> slots;  // [n_q][stride]: each query's visible slots (the tail only is read)
  std::vector<int> n;          // [n_q] visible keys per query
  // Per kv head g, its items (query i, head j of the group) at t = g * n_q * group + i * group + j:
  std::vector<const float*> q_rows;
  std::vector<float*> s_rows, a0_rows, a1_rows;
  std::vector<float> l;  // [t] softmax denominators
};

// From this many (query, head) items per kv head, each 16-key block is transposed once (keys in lanes)
// and every item's scores fold vertically; fewer items cannot pay for the transposing shuffles.
constexpr int kMinItemsKeysInLanes = 8;

// Scores of consecutive rows [p0, p1) (p0 a multiple of 16) of kv head kh for `items` items: s_rows[t][p].
// vh: the kv head's V rows, or null; rows [p0, p1) are requested into L2 beside the K reads, so the V pass
// finds them in cache (a cold decode step otherwise streamed V in a pass of its own, not overlapped with
// compute: 9/3 heads, D = 64, F16, 2,048 keys, cold, 2 threads: T = 1 / 2 / 4 90-99 / 131-137 / 198-202 ->
// 72-78 / 115-119 / 181-183 us).
template <typename KV>
__attribute__((target("avx512f"))) void shared_scores(const float* const* q_rows, float* const* s_rows, int items,
                                                      const KV* kh, const KV* vh, int p0, int p1, int D, float scale) {
  if (items < kMinItemsKeysInLanes || D > kMaxHeadDim) {
    for_item_groups(items, [&](auto G, int j0) {  // the first group's walk over the keys requests V
      scores_shared_range<decltype(G)::value>(q_rows + j0, kh, p0, p1, D, scale, s_rows + j0, j0 == 0 ? vh : nullptr);
    });
    return;
  }
  alignas(64) float kt[kMaxHeadDim * 16];
  const char* pf = reinterpret_cast<const char*>(kh + int64_t(p0) * D) + kPrefetchBytes;
  const char* vpf = vh ? reinterpret_cast<const char*>(vh + int64_t(p0) * D) : nullptr;
  const char* vpf_end = vh ? reinterpret_cast<const char*>(vh + int64_t(p1) * D) : nullptr;
  for (int p = p0; p < p1; p += 16) {
    const char* pf_end = reinterpret_cast<const char*>(kh + int64_t(p + 16) * D) + kPrefetchBytes;
    for (; pf < pf_end; pf += 64) {
      _mm_prefetch(pf, _MM_HINT_T0);
      if (vpf < vpf_end) _mm_prefetch(vpf, _MM_HINT_T1), vpf += 64;
    }
    const int nk = std::min(16, p1 - p);
    transpose_k_block(kh + int64_t(p) * D, nk, D, kt);
    for_item_groups(items, [&](auto G, int j0) {
      scores_kt_block<decltype(G)::value>(q_rows + j0, kt, p, nk, D, scale, s_rows + j0);
    });
  }
}


// Items whose shared V sums one pass over 16 columns of V computes: each row is loaded and converted
// once for all of them, and their 2 x 12 accumulators stay in registers.
constexpr int kMaxValueItems = 12;

// Columns [d0, d0 + 16 NG) of the V sums of `items` items of kv head vh: shared rows [0, P) for all at
// once, then each item's own positions [P, n) (rows sl[p]); normalized into out_rows.
template <int NG, typename KV>
__attribute__((target("avx512f"))) void value_columns(const float* const* e_rows, float* const* a0, float* const* a1,
                                                      int items, int group, const KV* vh, int P, const int* n,
                                                      const int32_t* const* sl, const float* l, float* const* out_rows,
                                                      int D, int d0) {
  for_item_groups<NG == 1 ? kMaxValueItems : 4>(items, [&](auto G, int j0) {
    pv_shared_cols<decltype(G)::value, NG>(vh, e_rows + j0, P, D, d0, a0 + j0, a1 + j0);
  });
  for (int t = 0; t < items; ++t) {
    const int nt = n[t / group];
    const int32_t* st = sl[t / group];
    if (nt > P) pv_block<NG>([vh, st, D](int p) { return vh + int64_t(st[p]) * D; }, e_rows[t], P, nt, d0, a0[t], a1[t]);
    const __m512 lv = _mm512_set1_ps(l[t]);
    for (int d = d0; d < d0 + 16 * NG; d += 16)
      _mm512_storeu_ps(out_rows[t] + d, _mm512_div_ps(_mm512_add_ps(_mm512_loadu_ps(a0[t] + d), _mm512_loadu_ps(a1[t] + d)), lv));
  }
}

template <typename KV>
void run_split(const AttentionArgs& a, const float* q, const KV* k, const KV* v, float* o, int P, SplitScratch& sc,
               ThreadPool& pool) {
  const int D = a.head_dim, H = a.n_heads, group = H / a.n_kv_heads, nq = a.n_q, per_kv = nq * group;
  const int64_t stride = row_stride(a), head_size = int64_t(a.capacity) * D;
  // Item (i, h) is row i * H + h of q, o, scores and acc; the pointer tables (and l) list it by kv head.
  std::vector<const int32_t*> sl(nq);
  std::vector<float*> out_rows(size_t(nq) * H);
  for (int i = 0; i < nq; ++i) sl[i] = sc.slots.data() + i * stride;
  for (int g = 0; g < a.n_kv_heads; ++g)
    for (int i = 0; i < nq; ++i)
      for (int j = 0; j < group; ++j) {
        const int64_t item = int64_t(i) * H + g * group + j, t = int64_t(g) * per_kv + i * group + j;
        sc.q_rows[t] = q + item * D;
        sc.s_rows[t] = sc.scores.data() + item * stride;
        sc.a0_rows[t] = sc.acc.data() + item * 2 * D;
        sc.a1_rows[t] = sc.a0_rows[t] + D;
        out_rows[t] = o + item * D;
      }
  const int chunks = (P + kChunk - 1) / kChunk;
  const bool prefetch_v = int64_t(P) * D * int64_t(sizeof(KV)) * a.n_kv_heads <= kMaxPrefetchedV * pool.num_threads();
  pool.run([&](int tid, int nth) {  // 1. shared scores: units of (kv head, chunk of keys)
    int64_t u0, u1;
    ThreadPool::split(int64_t(a.n_kv_heads) * chunks, tid, nth, 1, &u0, &u1);
    for (int64_t u = u0; u < u1; ++u) {
      const int g = int(u / chunks), p0 = int(u % chunks) * kChunk;
      const int64_t t0 = int64_t(g) * per_kv;
      shared_scores(sc.q_rows.data() + t0, sc.s_rows.data() + t0, per_kv, k + g * head_size, prefetch_v ? v + g * head_size : nullptr, p0,
                    std::min(P, p0 + kChunk), D, a.scale);
    }
  });
  pool.run([&](int tid, int nth) {  // 2. own scores and softmax, per item
    int64_t t0, t1;
    ThreadPool::split(int64_t(a.n_kv_heads) * per_kv, tid, nth, 1, &t0, &t1);
    for (int64_t t = t0; t < t1; ++t) {
      const int g = int(t / per_kv), i = int(t % per_kv) / group;
      item_scores(sc.q_rows[t], k + g * head_size, sl[i], P, P, sc.n[i], D, a.scale, sc.s_rows[t]);
      sc.l[t] = exp_and_sum(sc.s_rows[t], sc.n[i]);
    }
  });
  // Up to 4 items per kv head, 32-column units (two vectors per item in registers); more, 16-column
  // units with up to kMaxValueItems items per pass.
  const int cols = per_kv <= 4 && D % 32 == 0 ? 32 : 16, col_units = D / cols;
  pool.run([&](int tid, int nth) {  // 3. V sums: units of (kv head, columns)
    int64_t u0, u1;
    ThreadPool::split(int64_t(a.n_kv_heads) * col_units, tid, nth, 1, &u0, &u1);
    for (int64_t u = u0; u < u1; ++u) {
      const int g = int(u / col_units), d0 = int(u % col_units) * cols;
      const int64_t t0 = int64_t(g) * per_kv;
      auto run = [&](auto ng) {
        value_columns<decltype(ng)::value>(sc.s_rows.data() + t0, sc.a0_rows.data() + t0, sc.a1_rows.data() + t0,
                                           per_kv, group, v + g * head_size, P, sc.n.data(), sl.data(), sc.l.data() + t0,
                                           out_rows.data() + t0, D, d0);
      };
      if (cols == 32) run(std::integral_constant<int, 2>{}); else run(std::integral_constant<int, 1>{});
    }
  });
}

}  // namespace
#endif

bool attention_split(const AttentionArgs& a, const float* q, const void* k, const void* v, bool kv_f16,
                     const uint8_t* mask, float* o, ThreadPool& pool) {
#if EYAS_X86
  if (!use_avx512() || pool.num_threads() < 2 || a.n_q < 1 || a.n_q > kMaxQueries || a.head_dim % 16 != 0 ||
      a.prefix_len < kMinSharedKeys)
    return false;
  thread_local SplitScratch sc;  // the caller's; the workers get pointers
  const int nq = a.n_q, H = a.n_heads;
  const int64_t stride = row_stride(a);
  sc.slots.resize(size_t(nq) * stride);
  sc.n.resize(nq);
  int P = a.prefix_len + a.n_new;  // keys every query sees as slots 0, 1, ... in order
  for (int i = 0; i < nq; ++i) {
    int32_t* sl = sc.slots.data() + i * stride;
    sc.n[i] = collect_new_slots(a, mask, i, sl);  // writes the tail only; the prefix is never read here
    P = std::min(P, identity_run(sl, a.prefix_len, sc.n[i]));
  }
  P &= ~1;  // even, so each item's even/odd V accumulators carry on into its own positions
  for (int i = 0; i < nq; ++i)  // own positions below the prefix's end (an odd prefix's last key)
    for (int p = P; p < a.prefix_len; ++p) sc.slots[i * stride + p] = p;
  const int64_t items = int64_t(nq) * H;
  if (sc.scores.size() < size_t(items * stride)) sc.scores.resize(size_t(items * stride));
  sc.acc.assign(size_t(items) * 2 * a.head_dim, 0.0f);
  sc.l.resize(items);
  sc.q_rows.resize(items), sc.s_rows.resize(items), sc.a0_rows.resize(items), sc.a1_rows.resize(items);
  if (kv_f16)
    run_split(a, q, static_cast<const uint16_t*>(k), static_cast<const uint16_t*>(v), o, P, sc, pool);
  else
    run_split(a, q, static_cast<const float*>(k), static_cast<const float*>(v), o, P, sc, pool);
  return true;
#else
  (void)a, (void)q, (void)k, (void)v, (void)kv_f16, (void)mask, (void)o, (void)pool;
  return false;
#endif
}

}  // namespace eyas::cpu
