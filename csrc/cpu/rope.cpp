// RoPE. Each token's angles come from its own position only (angle = float(pos) * inv_freq[k], as
// Hugging Face computes it in float32; cos/sin evaluated in double), never from a recurrence over
// positions, so a row's bits do not depend on T or on which rows share the call.
#include "cpu/rope.h"

#include "core/rope_angles.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

namespace eyas::cpu {

namespace {

// cos/sin of recent positions for one inv_freq table. A decode step rotates q and k of every layer
// at one position, a tree verify at its few distinct depths and a prefill chunk at up to kEntries
// positions, so the 2 * layers calls of a forward share each entry (computed in double, the angles
// cost ~1% of a decode step and ~5% of a 32-node verify). Direct-mapped on the position.
class AngleTable {
 public:
  static constexpr int kEntries = 1024;

  AngleTable(const float* inv_freq, int half) : freq_(inv_freq, inv_freq + half), cs_(size_t(kEntries) * 2 * half) {
    std::fill(std::begin(tag_), std::end(tag_), int64_t(-1));
  }

  bool matches(const float* inv_freq, int half) const {
    return int(freq_.size()) == half && std::memcmp(freq_.data(), inv_freq, sizeof(float) * size_t(half)) == 0;
  }

  // [half] pairs (cos, sin) of float(pos) * inv_freq[k].
  const float* at(int32_t pos) {
    const int half = int(freq_.size()), e = int(uint32_t(pos) % kEntries);
    float* cs = cs_.data() + size_t(e) * 2 * half;
    if (tag_[e] != pos) {
      for (int k = 0; k < half; ++k) rope_cos_sin(pos, freq_[k], &cs[2 * k], &cs[2 * k + 1]);
      tag_[e] = pos;
    }
    return cs;
  }

 private:
  std::vector<float> freq_, cs_;
  int64_t tag_[kEntries];
};

// This thread's table for `inv_freq`: a few are kept (target and drafter may differ), the least
// recently used one is replaced.
AngleTable& angle_table(const float* inv_freq, int half) {
  thread_local std::vector<std::unique_ptr<AngleTable>> tables;  // most recently used first
  for (size_t i = 0; i < tables.size(); ++i)
    if (tables[i]->matches(inv_freq, half)) {
      std::rotate(tables.begin(), tables.begin() + i, tables.begin() + i + 1);
      return *tables[0];
    }
  constexpr size_t kTables = 4;
  if (tables.size() == kTables) tables.pop_back();
  tables.insert(tables.begin(), std::make_unique<AngleTable>(inv_freq, half));
  return *tables[0];
}

}  // namespace

void rope(const RopeArgs& a, const float* x, const int32_t* pos, const float* inv_freq, float* y, ThreadPool& pool) {
  const int half = a.rot_dim / 2, D = a.head_dim;
  auto body = [&](int tid, int nth) {
    int64_t t0, t1;
    ThreadPool::split(a.tokens, tid, nth, 1, &t0, &t1);
    if (t0 >= t1) return;
    AngleTable& table = angle_table(inv_freq, half);
    for (int64_t t = t0; t < t1; ++t) {
      const float* cs = table.at(pos[t]);
      for (int h = 0; h < a.heads; ++h) {
        const float* xr = x + (t * a.heads + h) * D;
        float* yr = y + (t * a.heads + h) * D;
        // NeoX pairs (k, k + half); interleaved pairs (2k, 2k + 1). Separate loops so the NeoX
        // one vectorizes (each output is x0 * c - x1 * s or x1 * c + x0 * s either way).
        if (a.style == 0) {
          for (int k = 0; k < half; ++k) {
            const float x0 = xr[k], x1 = xr[k + half], c = cs[2 * k], s = cs[2 * k + 1];
            yr[k] = x0 * c - x1 * s;
            yr[k + half] = x1 * c + x0 * s;
          }
        } else {
          for (int k = 0; k < half; ++k) {
            const float x0 = xr[2 * k], x1 = xr[2 * k + 1], c = cs[2 * k], s = cs[2 * k + 1];
            yr[2 * k] = x0 * c - x1 * s;
            yr[2 * k + 1] = x1 * c + x0 * s;
          }
        }
        if (yr != xr)
          for (int d = a.rot_dim; d < D; ++d) yr[d] = xr[d];
      }
    }
  };
  // Decode rotates one token: cheaper than waking the pool.
  if (a.tokens < 4) body(0, 1); else pool.run(body);
}

}  // namespace eyas::cpu
