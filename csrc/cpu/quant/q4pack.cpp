#include "cpu/quant/q4pack.h"

#include <cstring>

namespace eyas::cpu::quant {

// Where a GGUF Q4_0 / Q4_1 / Q5_0 / Q5_1 block keeps its fields: d first, then m (the _1 types), then the
// fifth bits (Q5), and the 16 qs bytes last. Read by the packer and by its inverse.
struct LegacyBlock {
  int bytes, qh_off, qs_off;
  bool has_min;
};
static LegacyBlock legacy_block(WKind kind) {
  const int bytes = kind == kQ4_0 ? kQ4_0Bytes : kind == kQ4_1 ? kQ4_1Bytes : kind == kQ5_0 ? kQ5_0Bytes : kQ5_1Bytes;
  const bool has_min = kind == kQ4_1 || kind == kQ5_1;
  return {bytes, has_min ? 4 : 2, bytes - 16, has_min};
}

void q4_pack(WKind kind, const uint8_t* w, size_t wrow, int64_t k, int64_t g0, int64_t g1, uint8_t* out) {
  const Q4PackAt at = q4pack_at(kind);
  const auto [bytes, qh_off, qs_off, has_min] = legacy_block(kind);
  const int64_t nb = k / 32;
  for (int64_t g = g0; g < g1; ++g)
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* o = out + size_t(g * nb + b) * at.bytes;
      for (int c = 0; c < 16; ++c) {
        const uint8_t* blk = w + size_t(16 * g + c) * wrow + size_t(b) * bytes;
        for (int r = 0; r < 4; ++r) std::memcpy(o + 64 * r + 4 * c, blk + qs_off + 4 * r, 4);
        std::memcpy(o + at.d + 2 * c, blk, 2);
        if (has_min) std::memcpy(o + at.m + 2 * c, blk + 2, 2);
        if (at.qh >= 0) {
          uint32_t qh;
          std::memcpy(&qh, blk + qh_off, 4);
          for (int e = 0; e < 4; ++e) {
            uint8_t plane = 0;
            for (int r = 0; r < 4; ++r)
              plane |= uint8_t(((qh >> (4 * r + e)) & 1) << r | ((qh >> (16 + 4 * r + e)) & 1) << (4 + r));
            o[at.qh + 4 * c + e] = plane;
          }
        }
      }
    }
}

void q8_pack(const uint8_t* w, size_t wrow, int64_t k, int64_t g0, int64_t g1, uint8_t* out) {
  const int64_t nb = k / 32;
  for (int64_t g = g0; g < g1; ++g)
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* o = out + size_t(g * nb + b) * kQ8PackBlockBytes;
      for (int c = 0; c < 16; ++c) {
        const uint8_t* blk = w + size_t(16 * g + c) * wrow + size_t(b) * kQ8_0Bytes;
        for (int r = 0; r < 8; ++r)
          for (int e = 0; e < 4; ++e) o[64 * r + 4 * c + e] = uint8_t(blk[2 + 4 * r + e] ^ 0x80);  // int8 + 128
        std::memcpy(o + 512 + 2 * c, blk, 2);
      }
    }
}

static void q6k_pack(const uint8_t* w, size_t wrow, int64_t k, int64_t g0, int64_t g1, uint8_t* out) {
  const int64_t nb = k / 256;
  for (int64_t g = g0; g < g1; ++g)
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* o = out + size_t(g * nb + b) * kQ6KPackBlockBytes;
      for (int i = 0; i < 16; ++i) {
        const uint8_t* blk = w + size_t(16 * g + i) * wrow + size_t(b) * kQ6_KBytes;
        for (int h = 0; h < 2; ++h)
          for (int r = 0; r < 8; ++r) {
            for (int e = 0; e < 2; ++e) std::memcpy(o + q6pack_ql(h, e, r) + 4 * i, blk + 64 * h + 32 * e + 4 * r, 4);
            std::memcpy(o + q6pack_qh(h, r) + 4 * i, blk + 128 + 32 * h + 4 * r, 4);
          }
        for (int p = 0; p < 8; ++p) std::memcpy(o + kQ6PackScales + 32 * p + 2 * i, blk + 192 + 2 * p, 2);
        std::memcpy(o + kQ6PackD + 2 * i, blk + 208, 2);
      }
    }
}

void kq_pack(WKind kind, const uint8_t* w, size_t wrow, int64_t k, int64_t g0, int64_t g1, uint8_t* out) {
  if (kind == kQ6_K) return q6k_pack(w, wrow, k, g0, g1, out);
  const KPackAt at = kpack_at(kind);
  const int bytes = kind == kQ5_K ? kQ5_KBytes : kQ4_KBytes, qs_off = kind == kQ5_K ? 48 : 16;
  const int64_t nb = k / 256;
  for (int64_t g = g0; g < g1; ++g)
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* o = out + size_t(g * nb + b) * at.bytes;
      for (int i = 0; i < 16; ++i) {
        const uint8_t* blk = w + size_t(16 * g + i) * wrow + size_t(b) * bytes;
        for (int c = 0; c < 4; ++c)
          for (int r = 0; r < 8; ++r) std::memcpy(o + kpack_ql(kind, c, r) + 4 * i, blk + qs_off + 32 * c + 4 * r, 4);
        if (kind == kQ5_K)
          for (int r = 0; r < 8; ++r) std::memcpy(o + kpack_qh(r) + 4 * i, blk + 16 + 4 * r, 4);
        uint8_t sc[8], mn[8];
        kquant_scales(blk + 4, sc, mn);
        for (int j = 0; j < 8; ++j) o[at.sc + 16 * j + i] = sc[j];
        for (int p = 0; p < 4; ++p) o[at.mn + 32 * p + 2 * i] = mn[2 * p], o[at.mn + 32 * p + 2 * i + 1] = mn[2 * p + 1];
        std::memcpy(o + at.d + 2 * i, blk, 2);
        std::memcpy(o + at.dmin + 2 * i, blk + 2, 2);
      }
    }
}

bool gguf_row_from_pack(WKind kind, const uint8_t* pack, int64_t k, int64_t row, uint8_t* out) {
  const int64_t g = row / 16;
  const int c = int(row % 16);
  if (kind == kQ8_0) {
    const int64_t nb = k / 32;
    // The row's bytes lie in 8 lines of each block: requested first, so their misses overlap.
    for (int64_t b = 0; b < nb; ++b)
      for (int r = 0; r < 8; ++r) __builtin_prefetch(pack + size_t(g * nb + b) * kQ8PackBlockBytes + 64 * r + 4 * c);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* o = pack + size_t(g * nb + b) * kQ8PackBlockBytes;
      uint8_t* blk = out + size_t(b) * kQ8_0Bytes;
      std::memcpy(blk, o + 512 + 2 * c, 2);
      for (int r = 0; r < 8; ++r)
        for (int e = 0; e < 4; ++e) blk[2 + 4 * r + e] = uint8_t(o[64 * r + 4 * c + e] ^ 0x80);
    }
    return true;
  }
  if (q4_packable(kind) || q5_packable(kind)) {
    const Q4PackAt at = q4pack_at(kind);
    const auto [bytes, qh_off, qs_off, has_min] = legacy_block(kind);
    const int64_t nb = k / 32;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* o = pack + size_t(g * nb + b) * at.bytes;
      uint8_t* blk = out + size_t(b) * bytes;
      for (int r = 0; r < 4; ++r) std::memcpy(blk + qs_off + 4 * r, o + 64 * r + 4 * c, 4);
      std::memcpy(blk, o + at.d + 2 * c, 2);
      if (has_min) std::memcpy(blk + 2, o + at.m + 2 * c, 2);
      if (at.qh >= 0) {
        uint32_t qh = 0;
        for (int e = 0; e < 4; ++e) {
          const uint32_t plane = o[at.qh + 4 * c + e];
          for (int r = 0; r < 4; ++r) qh |= ((plane >> r) & 1u) << (4 * r + e) | ((plane >> (4 + r)) & 1u) << (16 + 4 * r + e);
        }
        std::memcpy(blk + qh_off, &qh, 4);
      }
    }
    return true;
  }
  if (kind == kQ6_K) {
    const int64_t nb = k / 256;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* o = pack + size_t(g * nb + b) * kQ6KPackBlockBytes;
      uint8_t* blk = out + size_t(b) * kQ6_KBytes;
      for (int h = 0; h < 2; ++h)
        for (int r = 0; r < 8; ++r) {
          for (int e = 0; e < 2; ++e) std::memcpy(blk + 64 * h + 32 * e + 4 * r, o + q6pack_ql(h, e, r) + 4 * c, 4);
          std::memcpy(blk + 128 + 32 * h + 4 * r, o + q6pack_qh(h, r) + 4 * c, 4);
        }
      for (int p = 0; p < 8; ++p) std::memcpy(blk + 192 + 2 * p, o + kQ6PackScales + 32 * p + 2 * c, 2);
      std::memcpy(blk + 208, o + kQ6PackD + 2 * c, 2);
    }
    return true;
  }
  return false;
}

}  // namespace eyas::cpu::quant
