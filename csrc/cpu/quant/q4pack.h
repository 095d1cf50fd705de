// Q4_0 / Q4_1 weights repacked for the VNNI and AMX tile paths: built once per weight (ops/matmul.cpp keeps
// it beside the weight's buffer) so a multi-row matmul turns each block of 16 weight rows into
// int8 B tiles with three contiguous 64-byte loads' worth of AND and shift, instead of gathering
// 16 rows. The integers and scales are the GGUF ones, moved: the bits of every result stay those
// of dot_generic.h.
//
// Per group of 16 weight rows and per 32-block, q4pack_at(kind).bytes (exactly the GGUF bytes; Q4_1's
// 320 keep blocks 64-byte aligned, Q4_0's 288 do not, and its kernels load unaligned):
//   [0, 256)    for r = 0..3, row c = 0..15: qs bytes 4r..4r+3 of row c  ([4][16][4] u8)
//               -> B tile row r = these & 0x0F (elements 4r..4r+3), row r + 4 = >> 4 (16 + 4r..)
//   [256, 288)  d of the 16 rows (f16[16])
//   [288, 320)  m of the 16 rows (f16[16]; Q4_1 only: a Q4_0 block is 288 bytes, the GGUF size)
// Groups follow each other, blocks in order within a group; rows past N / 16 * 16 are not packed
// (the kernels give them to the VNNI path).
//
// Q5_0 / Q5_1 (read by the AVX-512 VNNI path at every T), q4pack_at(kind).bytes per 16 rows and 32-block,
// exactly the GGUF bytes (352 / 384; the kernel loads unaligned):
//   [0, 256)    the nibbles as Q4's
//   [256, 320)  fifth bits: byte 4c + e, bit r (r = 0..3) of element 4r + e of row c, bit 4 + r of
//               element 16 + 4r + e; a 16-bit shift and one AND move plane r's bits to bit 4
//   [320, 352)  d of the 16 rows (f16[16]);  [352, 384)  m of the 16 rows (f16[16], Q5_1 only)
//
// Q8_0 (read by the VNNI path at small T: the lm_head of a decode step), kQ8PackBlockBytes per 16
// rows and 32-block, unpadded (the stream is the cost; the kernel loads unaligned):
//   [0, 512)    for r = 0..7, row c = 0..15: qs bytes 4r..4r+3 of row c, each + 128 (as u8), so
//               vpdpbusd takes them as its unsigned operand; the kernel subtracts 128 * sum(x_q)
//   [512, 544)  d of the 16 rows (f16[16])
//
// Q4_K (read by every table's K-quant passes, kqpack_*.h), kQ4KPackBlockBytes per 16 rows and 256-block,
// no padding (37 x 64 bytes, 1.028x the GGUF bytes); the per-row terms first, read at each sub-block pair:
//   [0, 128)      six-bit scales: for j = 0..7, row i: scale j of row i (u8)
//   [128, 256)    mins: for p = 0..3, row i: mins 2p, 2p + 1 of row i (u8 pairs: one dword of words
//                 per row once widened)
//   [256, 288)    d of the 16 rows (f16[16]);  [288, 320)  dmin of the 16 rows (f16[16])
//   [320, 2368)   for c = 0..3, r = 0..7, row i = 0..15: qs bytes 32c + 4r .. + 3 of row i, so the
//                 low nibbles of the 64 bytes at 320 + 512c + 64r (kpack_ql) are elements 64c + 4r .. + 3
//                 of the 16 rows (sub-block 2c), the high nibbles elements 64c + 32 + 4r .. (sub-block 2c + 1)
// Q5_K, kQ5KPackBlockBytes (45 x 64, 1.023x): Q4_K's planes with the fifth bits beside the first pair's
//   planes, in the order the row passes read them (kpack_ql, kpack_qh), and the per-row terms last (first,
//   as Q4_K's, measured 2-10 % slower on its passes of 2-8 rows; docs/performance.md §8.4):
//   [0, 1024)     for r = 0..7: plane r of pair 0 at 128r, then at 128r + 64, for row i: qh bytes 4r .. + 3
//                 of row i (bit 2c of a byte: the fifth bit of the low nibble of plane (c, r); bit 2c + 1:
//                 of the high nibble)
//   [1024, 2560)  pairs c = 1..3 as Q4_K's planes, at 512 + 512c + 64r
//   [2560, 2880)  scales, mins, d, dmin as Q4_K's [0, 320)
// Q6_K, kQ6KPackBlockBytes (exactly the GGUF bytes):
//   [0, 3072)     for h = 0..1, r = 0..7, three lines at 1536h + 192r (q6pack_ql, q6pack_qh):
//                   ql of e = 0 and e = 1: for row i, ql bytes 64h + 32e + 4r .. + 3 of row i (low
//                   nibbles: elements 128h + 32e + 4r .., high: 128h + 64 + 32e + 4r ..), then
//                   qh: for row i, qh bytes 32h + 4r .. + 3 (bits 2e..: of the low nibble of plane
//                   (h, e, r); bits 4 + 2e..: of its high nibble)
//                 so the one-row kernels, which need a plane's two ql lines with their qh line, read
//                 the block in address order
//   [3072, 3328)  scales: for p = 0..7, row i: scales 2p, 2p + 1 of row i (int8 pairs)
//   [3328, 3360)  d of the 16 rows (f16[16])
#pragma once
#include <cstddef>
#include <cstdint>

#include "cpu/quant/formats.h"

namespace eyas::cpu::quant {

constexpr int kQ8PackBlockBytes = 544;
constexpr int kQ4KPackBlockBytes = 2368;
constexpr int kQ5KPackBlockBytes = 2880;
constexpr int kQ6KPackBlockBytes = 3360;

// Offsets inside a Q4_K / Q5_K pack block (layout above).
struct KPackAt {
  int sc, mn, d, dmin, bytes;
};
constexpr KPackAt kpack_at(WKind k) {
  return k == kQ5_K ? KPackAt{2560, 2688, 2816, 2848, kQ5KPackBlockBytes} : KPackAt{0, 128, 256, 288, kQ4KPackBlockBytes};
}
// Plane r (0..7) of sub-block pair c (0..3) of a Q4_K / Q5_K pack block, and Q5_K's qh line r.
constexpr int kpack_ql(WKind k, int c, int r) { return k != kQ5_K ? 320 + 512 * c + 64 * r : c == 0 ? 128 * r : 512 + 512 * c + 64 * r; }
constexpr int kpack_qh(int r) { return 128 * r + 64; }
inline bool kpackable(WKind k) { return k == kQ4_K || k == kQ5_K || k == kQ6_K; }

// Q6_K pack block offsets: plane r (0..7) of the low 128 elements' half h, ql of e = 0 / 1 and the qh line
// they share, in the order the one-row kernels read them (layout above).
constexpr int q6pack_ql(int h, int e, int r) { return 1536 * h + 192 * r + 64 * e; }
constexpr int q6pack_qh(int h, int r) { return 1536 * h + 192 * r + 128; }
constexpr int kQ6PackScales = 3072, kQ6PackD = 3328;  // its scale pairs (8 x 32 bytes) and the 16 rows' d

// Sub-blocks of a K-quant pack block (Q6_K: 16 of 16 elements, else 8 of 32), 64 / that many planes each.
constexpr int kpack_sub_blocks(WKind k) { return k == kQ6_K ? 16 : 8; }

// Where sub-block g of a K-quant pack block is, for kernels that take it a sub-block at a time: its
// plane r at line + stride * r, the qh line of that plane at qh + qh_stride * r. Q4_K / Q5_K: g = 2c +
// high, plane r (of 8) at kpack_ql(c, r), elements 64c + 32 high + 4r; Q5_K's fifth bit is bit g of
// kpack_qh(r). Q6_K: g = 8h + 2e + rr + 4 high, plane r (of 4) is plane 4rr + r of (h, e) (q6pack_ql),
// elements 128h + 32e + 16rr + 4r + 64 high, bits 2e + 4 high and the next one of its qh line.
struct KPackSub {
  int line, act, qh, bit, stride, qh_stride;
  bool high;
};
constexpr KPackSub kpack_sub(WKind k, int g) {
  if (k == kQ6_K) {
    const int h6 = g / 8, e = (g / 2) % 2, rr = g % 2;
    const bool high = (g / 4) % 2;
    const int stride = q6pack_ql(0, 0, 1) - q6pack_ql(0, 0, 0);
    return {q6pack_ql(h6, e, 4 * rr), 128 * h6 + 32 * e + 16 * rr + (high ? 64 : 0), q6pack_qh(h6, 4 * rr),
            2 * e + (high ? 4 : 0), stride, stride, high};
  }
  const int c = g / 2;
  return {kpack_ql(k, c, 0), 64 * c + 32 * (g % 2), k == kQ5_K ? kpack_qh(0) : 0, g, kpack_ql(k, c, 1) - kpack_ql(k, c, 0),
          kpack_qh(1) - kpack_qh(0), g % 2 == 1};
}

inline bool q4_packable(WKind k) { return k == kQ4_0 || k == kQ4_1; }
inline bool q5_packable(WKind k) { return k == kQ5_0 || k == kQ5_1; }

// Offsets inside a Q4_0 / Q4_1 / Q5_0 / Q5_1 pack block (layouts above; qh < 0: no fifth bits).
struct Q4PackAt {
  int qh, d, m, bytes;
};
constexpr Q4PackAt q4pack_at(WKind k) {
  return k == kQ5_0 ? Q4PackAt{256, 320, -1, 352} : k == kQ5_1 ? Q4PackAt{256, 320, 352, 384}
                    : k == kQ4_1 ? Q4PackAt{-1, 256, 288, 320} : Q4PackAt{-1, 256, -1, 288};
}

inline int pack_block_bytes(WKind k) {
  return k == kQ8_0 ? kQ8PackBlockBytes : k == kQ6_K ? kQ6KPackBlockBytes : kpackable(k) ? kpack_at(k).bytes : q4pack_at(k).bytes;
}

// Bytes of the packed form of an [n, k] weight of type `kind` (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 or a K-quant).
inline size_t pack_bytes(WKind kind, int64_t n, int64_t k) {
  return size_t(n / 16) * size_t(k / (kpackable(kind) ? 256 : 32)) * size_t(pack_block_bytes(kind));
}

// Packs 16-row groups [g0, g1) of w ([n] rows of wrow bytes, GGUF Q4_0/Q4_1/Q5_0/Q5_1) into out
// (the whole packed buffer, group g at g * (k / 32) * q4pack_at(kind).bytes).
void q4_pack(WKind kind, const uint8_t* w, size_t wrow, int64_t k, int64_t g0, int64_t g1, uint8_t* out);

// The same for GGUF Q8_0 (layout above).
void q8_pack(const uint8_t* w, size_t wrow, int64_t k, int64_t g0, int64_t g1, uint8_t* out);

// The same for GGUF Q4_K, Q5_K or Q6_K (layouts above).
void kq_pack(WKind kind, const uint8_t* w, size_t wrow, int64_t k, int64_t g0, int64_t g1, uint8_t* out);

// Row `row` (< n / 16 * 16) of a packed [n, k] weight back as its GGUF bytes (out: k / block-elements blocks),
// the inverse of the packers above, for Q8_0, Q4_0 / Q4_1 / Q5_0 / Q5_1 and Q6_K; false for the other kinds
// (Q4_K / Q5_K packs keep their scales decoded). A tied token embedding reads its rows back from the head's
// pack once the file pages under it have left the resident set.
bool gguf_row_from_pack(WKind kind, const uint8_t* pack, int64_t k, int64_t row, uint8_t* out);

}  // namespace eyas::cpu::quant
