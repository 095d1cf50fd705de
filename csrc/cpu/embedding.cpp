#include "cpu/embedding.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/dtype.h"
#include "cpu/quant/formats.h"
#include "cpu/quant/q4pack.h"
#include "ops/cpu_controls.h"

namespace eyas::cpu {

using namespace quant;

static void deq_q4_k_like(const uint8_t* blk, const uint8_t* qh, const uint8_t* qs, float* y) {
  uint8_t sc[8], mn[8];
  kquant_scales(blk + 4, sc, mn);
  const float d = h2f(rd16(blk)), dmin = h2f(rd16(blk + 2));
  for (int j = 0; j < 8; ++j) {
    const float ds = d * float(sc[j]), dm = dmin * float(mn[j]);
    const int c = j / 2, shift = (j & 1) * 4;
    for (int l = 0; l < 32; ++l) {
      int q = (qs[32 * c + l] >> shift) & 15;
      if (qh) q |= ((qh[l] >> j) & 1) << 4;
      y[32 * j + l] = ds * float(q) - dm;
    }
  }
}

void dequantize_row(int32_t wtype, const uint8_t* row, int64_t k, float* y) {
  switch (DType(wtype)) {
    case DType::F32: std::memcpy(y, row, size_t(k) * 4); return;
    case DType::F16:
      for (int64_t i = 0; i < k; ++i) y[i] = h2f(rd16(row + 2 * i));
      return;
    case DType::BF16:
      for (int64_t i = 0; i < k; ++i) y[i] = bf2f(rd16(row + 2 * i));
      return;
    case DType::Q8_0:
      for (int64_t b = 0; b < k / 32; ++b, row += kQ8_0Bytes) {
        const float d = h2f(rd16(row));
        for (int j = 0; j < 32; ++j) y[32 * b + j] = d * float(int8_t(row[2 + j]));
      }
      return;
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1: {
      const DType t = DType(wtype);
      const bool has_m = t == DType::Q4_1 || t == DType::Q5_1, five = t == DType::Q5_0 || t == DType::Q5_1;
      const int bytes = type_traits(t).block_bytes, qs_off = (has_m ? 4 : 2) + (five ? 4 : 0);
      const int offset = has_m ? 0 : (five ? 16 : 8);
      for (int64_t b = 0; b < k / 32; ++b, row += bytes) {
        const float d = h2f(rd16(row)), m = has_m ? h2f(rd16(row + 2)) : 0.0f;
        const uint32_t qh = five ? rd32(row + (has_m ? 4 : 2)) : 0;
        for (int j = 0; j < 16; ++j) {
          int lo = (row[qs_off + j] & 15) | int(((qh >> j) & 1) << 4);
          int hi = (row[qs_off + j] >> 4) | int(((qh >> (j + 16)) & 1) << 4);
          float* o = y + 32 * b;
          if (has_m) {
            o[j] = d * float(lo) + m;
            o[j + 16] = d * float(hi) + m;
          } else {
            o[j] = d * float(lo - offset);
            o[j + 16] = d * float(hi - offset);
          }
        }
      }
      return;
    }
    case DType::Q4_K:
      for (int64_t b = 0; b < k / 256; ++b, row += kQ4_KBytes) deq_q4_k_like(row, nullptr, row + 16, y + 256 * b);
      return;
    case DType::Q5_K:
      for (int64_t b = 0; b < k / 256; ++b, row += kQ5_KBytes) deq_q4_k_like(row, row + 16, row + 48, y + 256 * b);
      return;
    case DType::Q6_K:
      for (int64_t b = 0; b < k / 256; ++b, row += kQ6_KBytes) {
        const int8_t* sc = reinterpret_cast<const int8_t*>(row + 192);
        const float d = h2f(rd16(row + 208));
        float* o = y + 256 * b;
        for (int h = 0; h < 2; ++h) {
          const uint8_t* ql = row + 64 * h;
          const uint8_t* qh = row + 128 + 32 * h;
          for (int l = 0; l < 32; ++l) {
            const int q[4] = {(ql[l] & 15) | (((qh[l] >> 0) & 3) << 4), (ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4),
                              (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4), (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)};
            for (int p = 0; p < 4; ++p) {
              const int e = 128 * h + 32 * p + l;
              o[e] = (d * float(sc[e / 16])) * float(q[p] - 32);
            }
          }
        }
      }
      return;
    default: throw std::invalid_argument("[embedding] unsupported table type " + std::to_string(wtype));
  }
}

static std::atomic<int64_t> rows_from_packs{0};

void embedding(const EmbeddingArgs& a, const uint8_t* w, const int32_t* ids, float* y, ThreadPool& pool,
               const uint8_t* pack) {
  const size_t rb = row_bytes(DType(a.wtype), a.k);
  const WKind kind = kind_of_dtype(a.wtype);
  const int64_t packed_rows = pack ? a.vocab / 16 * 16 : 0;  // rows past the last 16-row group stay in the file
  pool.run([&](int tid, int nth) {
    int64_t r0, r1;
    ThreadPool::split(a.rows, tid, nth, 1, &r0, &r1);
    thread_local std::vector<uint8_t> row;
    int64_t from_pack = 0;
    for (int64_t r = r0; r < r1; ++r) {
      float* out = y + r * int64_t(a.k);
      const int32_t id = ids[r];
      if (id < 0 || id >= a.vocab) {  // validated before dispatch; NaN rather than a wild read
        for (int64_t i = 0; i < a.k; ++i) out[i] = std::numeric_limits<float>::quiet_NaN();
        continue;
      }
      if (id < packed_rows) {
        row.resize(rb);
        if (gguf_row_from_pack(kind, pack, a.k, id, row.data())) {
          dequantize_row(a.wtype, row.data(), a.k, out);
          ++from_pack;
          continue;
        }
      }
      dequantize_row(a.wtype, w + size_t(id) * rb, a.k, out);
    }
    if (from_pack) rows_from_packs += from_pack;
  });
}

}  // namespace eyas::cpu

// Declared with the CPU test hooks (csrc/ops/cpu_controls.h).
int64_t eyas::ops::embedding_rows_from_packs() { return cpu::rows_from_packs.load(); }
