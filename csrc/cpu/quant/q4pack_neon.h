// NEON (dot-product extension) on the repacked Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 weights (q4pack.h: the
// layouts the x86 paths read), each 16-column group as four quarters of 4 lanes (bytes 16q .. 16q + 15
// of a 64-byte plane are columns 4q .. 4q + 3), so SDOT by lane against one 16-byte activation load
// gives 4 columns' block dots with no horizontal sums. Included after q4rows.h in TUs compiled for
// ARMv8.2-A+dotprod.
//
// Exact integers, then dot_generic.h's float operations in block order: nibbles (plus Q5's fifth
// bit) are at most 31 and Q8_0's stored int8 + 128 flips back to int8, so SDOT takes them as signed
// bytes; Q4_0 / Q5_0 take their zero point out as q4_rows' offset (8 or 16 times the activation sum),
// Q8_0 needs none.
// (No include guard: included once per ISA namespace.)

// Rows [r0, r0 + RT) x quarters [q0, q0 + Q) of the 16-column group at n.
template <WKind K, int RT, int Q>
static void q4n_rows(const Job& j, const Q4Rows& xr, int64_t n, int q0, int64_t r0) {
  constexpr bool has_min = K == kQ4_1 || K == kQ5_1, q8 = K == kQ8_0, five = K == kQ5_0 || K == kQ5_1;
  constexpr Q4PackAt at = q8 ? Q4PackAt{-1, 512, -1, kQ8PackBlockBytes} : q4pack_at(K);
  constexpr int block_bytes = at.bytes;
  const int64_t nb = j.k / 32;
  const uint8_t* grp = j.wpack + size_t(n / 16) * size_t(nb) * block_bytes;
  const int8_t* xq0 = j.act.qs + r0 * j.k;
  float32x4_t acc[RT][Q];
  for (int t = 0; t < RT; ++t)
    for (int q = 0; q < Q; ++q) acc[t][q] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = grp + b * block_bytes;
    if (q0 == 0)
      for (int l = 0; l < block_bytes; l += 64) __builtin_prefetch(blk + 8 * block_bytes + l);
    int8x16_t xlo[RT], xhi[RT];  // elements 0..15 and 16..31 of the block (Q8_0: 4r .. for r < 4, then r >= 4)
    for (int t = 0; t < RT; ++t) {
      xlo[t] = vld1q_s8(xq0 + t * j.k + b * 32);
      xhi[t] = vld1q_s8(xq0 + t * j.k + b * 32 + 16);
    }
    int32x4_t iv[RT][Q];
    for (int t = 0; t < RT; ++t)
      for (int q = 0; q < Q; ++q) iv[t][q] = vdupq_n_s32(0);
    for (int q = 0; q < Q; ++q) {
      const int qq = q0 + q;
      if constexpr (q8) {  // plane r: elements 4r .. 4r + 3, stored + 128
#define EYAS_Q8N_PLANE(R, X, L)                                                                          \
  {                                                                                                      \
    const int8x16_t w = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(blk + 64 * (R) + 16 * qq), vdupq_n_u8(0x80))); \
    for (int t = 0; t < RT; ++t) iv[t][q] = vdotq_laneq_s32(iv[t][q], w, X[t], L);                     \
  }
        EYAS_Q8N_PLANE(0, xlo, 0) EYAS_Q8N_PLANE(1, xlo, 1) EYAS_Q8N_PLANE(2, xlo, 2) EYAS_Q8N_PLANE(3, xlo, 3)
        EYAS_Q8N_PLANE(4, xhi, 0) EYAS_Q8N_PLANE(5, xhi, 1) EYAS_Q8N_PLANE(6, xhi, 2) EYAS_Q8N_PLANE(7, xhi, 3)
#undef EYAS_Q8N_PLANE
      } else {  // plane r: low nibbles elements 4r .., high nibbles 16 + 4r ..
        uint8x16_t h = vdupq_n_u8(0);
        if constexpr (five) h = vld1q_u8(blk + at.qh + 16 * qq);
#define EYAS_Q4N_PLANE(R)                                                                                \
  {                                                                                                      \
    const uint8x16_t v = vld1q_u8(blk + 64 * (R) + 16 * qq);                                             \
    uint8x16_t lo = vandq_u8(v, vdupq_n_u8(0x0F)), hi = vshrq_n_u8(v, 4);                                \
    if constexpr (five) { /* bit R of each plane byte (low nibbles), bit 4 + R (high), to bit 4 */       \
      lo = vorrq_u8(lo, vshlq_n_u8(vandq_u8(vshlq_u8(h, vdupq_n_s8(-(R))), vdupq_n_u8(1)), 4));         \
      hi = vorrq_u8(hi, vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 4 + (R)), vdupq_n_u8(1)), 4));                \
    }                                                                                                    \
    for (int t = 0; t < RT; ++t) {                                                                       \
      iv[t][q] = vdotq_laneq_s32(iv[t][q], vreinterpretq_s8_u8(lo), xlo[t], R);                          \
      iv[t][q] = vdotq_laneq_s32(iv[t][q], vreinterpretq_s8_u8(hi), xhi[t], R);                          \
    }                                                                                                    \
  }
        EYAS_Q4N_PLANE(0) EYAS_Q4N_PLANE(1) EYAS_Q4N_PLANE(2) EYAS_Q4N_PLANE(3)
#undef EYAS_Q4N_PLANE
      }
    }
    for (int q = 0; q < Q; ++q) {
      const int qq = q0 + q;
      const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(blk + at.d + 8 * qq))));
      float32x4_t mw = dw;
      if constexpr (has_min) mw = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(blk + at.m + 8 * qq))));
      for (int t = 0; t < RT; ++t) {
        const int64_t rb = t * nb + b;
        int32x4_t it = iv[t][q];
        if constexpr (K == kQ4_0 || K == kQ5_0) it = vsubq_s32(it, vdupq_n_s32(xr.off[(r0 * nb) + rb]));
        // vfmaq_f32(a, b, c) = a + b * c with one rounding
        float32x4_t a = vfmaq_f32(acc[t][q], vcvtq_f32_s32(it), vmulq_f32(dw, vdupq_n_f32(xr.dx[(r0 * nb) + rb])));
        if constexpr (has_min) a = vfmaq_f32(a, mw, vdupq_n_f32(xr.dsx[(r0 * nb) + rb]));
        acc[t][q] = a;
      }
    }
  }
  for (int t = 0; t < RT; ++t)
    for (int q = 0; q < Q; ++q) vst1q_f32(j.y + (r0 + t) * j.n + n + 4 * (q0 + q), acc[t][q]);
}

// The NEON table's Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 path at every T over the repack: one row takes the
// whole group a pass, more rows two quarters a pass in passes of up to 4 rows. Columns past N / 16 *
// 16, and every column without a pack, on the GGUF path `Fallback`. Same bits either way.
template <WKind K, ColsFn Fallback>
void cols_neon_packed(const Job& j, int64_t n0, int64_t n1) {
  const int64_t full = j.wpack ? n0 + (n1 - n0) / 16 * 16 : n0;
  if (full > n0) {
    uint8_t* base = thread_scratch<kScratchKernel>(size_t(j.t * (j.k / 32)) * 12);
    const Q4Rows xr = q4_rows<K>(j, base);
    for (int64_t n = n0; n < full; n += 16) {
      if (j.t == 1) {
        q4n_rows<K, 1, 4>(j, xr, n, 0, 0);
        continue;
      }
      for (int q0 = 0; q0 < 4; q0 += 2) {
        int64_t r = 0;
        for (; r + 4 <= j.t; r += 4) q4n_rows<K, 4, 2>(j, xr, n, q0, r);
        switch (j.t - r) {
          case 3: q4n_rows<K, 3, 2>(j, xr, n, q0, r); break;
          case 2: q4n_rows<K, 2, 2>(j, xr, n, q0, r); break;
          case 1: q4n_rows<K, 1, 2>(j, xr, n, q0, r); break;
          default: break;
        }
      }
    }
  }
  if (full < n1) Fallback(j, full, n1);
}
