// NEON (dot-product extension) on the repacked K-quant weights (q4pack.h: the layout the x86 paths
// read), each 16-column group as four quarters of 4 lanes (bytes 16q .. 16q + 15 of every 64-byte line
// are columns 4q .. 4q + 3, 4 quants each), so SDOT by lane (vdotq_laneq_s32) gives 4 columns' plane
// dots against one activation dword with no horizontal sums. Included after kquant_neon.h (whose GGUF
// path takes the columns past the packed groups) in TUs compiled for ARMv8.2-A+dotprod.
//
// Exact integers, then kblock_term's float operations: quants (at most 63) are signed bytes to SDOT,
// each sub-block's int32 dots are multiplied by its scale (vmlaq_s32, exact), and the mins' (Q4_K,
// Q5_K) or the + 32's (Q6_K) term meets the activation sum pairs of kq_sum_pairs.
// (No include guard: included once per ISA namespace.)

// The 16 quants of quarter line `line` (and its qh line): the low or the high nibbles, plus Q5_K's fifth
// bit (bit `bit` of the qh byte) or Q6_K's two high bits (bits bit, bit + 1).
template <WKind K>
static inline int8x16_t kqn_quants(const uint8_t* line, const uint8_t* qh_line, bool high, int bit) {
  const uint8x16_t v = vld1q_u8(line);
  uint8x16_t q = high ? vshrq_n_u8(v, 4) : vandq_u8(v, vdupq_n_u8(0x0F));
  if constexpr (K == kQ5_K || K == kQ6_K) {
    const uint8x16_t h = vshlq_u8(vld1q_u8(qh_line), vdupq_n_s8(int8_t(-bit)));  // bits from `bit` down to 0
    q = vorrq_u8(q, vshlq_n_u8(vandq_u8(h, vdupq_n_u8(K == kQ5_K ? 1 : 3)), 4));
  }
  return vreinterpretq_s8_u8(q);
}

// Sub-block g's scales of columns 4q .. 4q + 3 of pack block s as int32 lanes.
template <WKind K>
static inline int32x4_t kqn_scales(const uint8_t* s, int g, int q) {
  if constexpr (K == kQ6_K) {  // int8 pairs (scales 2p, 2p + 1 of each row): byte g % 2 of each pair
    const int8_t* p = reinterpret_cast<const int8_t*>(s + kQ6PackScales + 32 * (g / 2) + 8 * q + g % 2);
    const int32_t v[4] = {p[0], p[2], p[4], p[6]};
    return vld1q_s32(v);
  } else {
    const uint8_t* p = s + kpack_at(K).sc + 16 * g + 4 * q;
    const int32_t v[4] = {p[0], p[1], p[2], p[3]};
    return vld1q_s32(v);
  }
}

// kblock_term's integers past the scaled dots, for columns 4q .. 4q + 3 of pack block s and one row's
// sum pairs pr: Q4_K / Q5_K the mins' term mins . 32-sums; Q6_K 32 * (scales . 16-sums).
template <WKind K>
static inline int32x4_t kqn_sum_term(const uint8_t* s, int q, const int32_t* pr) {
  constexpr int P = K == kQ6_K ? 8 : 4;
  int32x4_t c = vdupq_n_s32(0);
  for (int p = 0; p < P; ++p) {
    // words (x_2p, x_2p+1) of each column against the row's pair (S_2p, S_2p+1)
    const int16x8_t w = K == kQ6_K ? vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(s + kQ6PackScales + 32 * p + 8 * q)))
                                   : vreinterpretq_s16_u16(vmovl_u8(vld1_u8(s + kpack_at(K).mn + 32 * p + 8 * q)));
    const int16x8_t sp = vreinterpretq_s16_s32(vdupq_n_s32(pr[p]));
    c = vaddq_s32(c, vpaddq_s32(vmull_s16(vget_low_s16(w), vget_low_s16(sp)), vmull_high_s16(w, sp)));
  }
  return K == kQ6_K ? vshlq_n_s32(c, 5) : c;
}

// Rows [r0, r0 + RT) x quarters [q0, q0 + Q) of the 16-column group at n.
template <WKind K, int RT, int Q>
static void kqn_rows(const Job& j, const int32_t* pairs, int64_t n, int q0, int64_t r0) {
  constexpr bool q6 = K == kQ6_K;
  constexpr int block_bytes = q6 ? kQ6KPackBlockBytes : kpack_at(K).bytes, G = kpack_sub_blocks(K), P = 64 / G;
  constexpr int pair_n = kq_pairs_per_block(K);
  const int64_t nb = j.k / 256;
  const uint8_t* src = j.wpack + size_t(n / 16) * size_t(nb) * block_bytes;
  const int8_t* xq0 = j.act.qs + r0 * j.k;
  float32x4_t acc[RT][Q];
  for (int t = 0; t < RT; ++t)
    for (int q = 0; q < Q; ++q) acc[t][q] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* s = src + b * block_bytes;
    if (q0 == 0)
      for (int l = 0; l < block_bytes; l += 64) __builtin_prefetch(s + block_bytes + l);
    const int8_t* xb = xq0 + b * 256;
    int32x4_t i1[RT][Q];
    for (int t = 0; t < RT; ++t)
      for (int q = 0; q < Q; ++q) i1[t][q] = vdupq_n_s32(0);
    for (int g = 0; g < G; ++g) {
      const KPackSub sub = kpack_sub(K, g);
      int32x4_t d[RT][Q];
      for (int t = 0; t < RT; ++t)
        for (int q = 0; q < Q; ++q) d[t][q] = vdupq_n_s32(0);
      for (int r4 = 0; r4 < P; r4 += 4) {  // four planes against one 16-byte activation load
        int8x16_t xv[RT];
        for (int t = 0; t < RT; ++t) xv[t] = vld1q_s8(xb + t * j.k + sub.act + 4 * r4);
#define EYAS_KQN_PLANE(L)                                                                                          \
  for (int q = 0; q < Q; ++q) {                                                                                  \
    const int off = 16 * (q0 + q);                                                                               \
    const int8x16_t w = kqn_quants<K>(s + sub.line + sub.stride * (r4 + L) + off, s + sub.qh + sub.qh_stride * (r4 + L) + off, \
                                      sub.high, sub.bit);                                                         \
    for (int t = 0; t < RT; ++t) d[t][q] = vdotq_laneq_s32(d[t][q], w, xv[t], L);                               \
  }
        EYAS_KQN_PLANE(0)
        EYAS_KQN_PLANE(1)
        EYAS_KQN_PLANE(2)
        EYAS_KQN_PLANE(3)
#undef EYAS_KQN_PLANE
      }
      for (int q = 0; q < Q; ++q) {
        const int32x4_t sc = kqn_scales<K>(s, g, q0 + q);
        for (int t = 0; t < RT; ++t) i1[t][q] = vmlaq_s32(i1[t][q], d[t][q], sc);
      }
    }
    for (int q = 0; q < Q; ++q) {
      const int qq = q0 + q;
      const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(s + (q6 ? kQ6PackD : kpack_at(K).d) + 8 * qq))));
      float32x4_t dmw = dw;
      if constexpr (!q6)
        dmw = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(s + kpack_at(K).dmin + 8 * qq))));
      for (int t = 0; t < RT; ++t) {
        const int32x4_t c = kqn_sum_term<K>(s, qq, pairs + ((r0 + t) * nb + b) * pair_n);
        const float32x4_t dxv = vdupq_n_f32(j.act.d[(r0 + t) * j.act.d_per_row + b]);
        float32x4_t pv;
        if constexpr (q6) {
          pv = vmulq_f32(vcvtq_f32_s32(vsubq_s32(i1[t][q], c)), vmulq_f32(dw, dxv));
        } else {
          pv = vsubq_f32(vmulq_f32(vcvtq_f32_s32(i1[t][q]), vmulq_f32(dw, dxv)), vmulq_f32(vcvtq_f32_s32(c), vmulq_f32(dmw, dxv)));
        }
        acc[t][q] = vaddq_f32(acc[t][q], pv);
      }
    }
  }
  for (int t = 0; t < RT; ++t)
    for (int q = 0; q < Q; ++q) vst1q_f32(j.y + (r0 + t) * j.n + n + 4 * (q0 + q), acc[t][q]);
}

// The NEON table's K-quant path at every T over the pack: one row takes the whole group in one pass,
// more rows two quarters a pass in passes of up to 4 rows (the registers: 3 accumulators per row and
// quarter). Columns past N / 16 * 16, and every column without a pack, on the GGUF path.
template <WKind K>
void cols_kq_packed_neon(const Job& j, int64_t n0, int64_t n1) {
  const int64_t full = j.wpack ? n0 + (n1 - n0) / 16 * 16 : n0;
  if (full > n0) {
    const int32_t* pairs = kq_sum_pairs<K>(j);
    for (int64_t n = n0; n < full; n += 16) {
      if (j.t == 1) {
        kqn_rows<K, 1, 4>(j, pairs, n, 0, 0);
        continue;
      }
      for (int q0 = 0; q0 < 4; q0 += 2) {
        int64_t r = 0;
        for (; r + 4 <= j.t; r += 4) kqn_rows<K, 4, 2>(j, pairs, n, q0, r);
        switch (j.t - r) {
          case 3: kqn_rows<K, 3, 2>(j, pairs, n, q0, r); break;
          case 2: kqn_rows<K, 2, 2>(j, pairs, n, q0, r); break;
          case 1: kqn_rows<K, 1, 2>(j, pairs, n, q0, r); break;
          default: break;
        }
      }
    }
  }
  if (full < n1) cols_kquant<K, kblock_term_neon<K>>(j, full, n1);  // after: it reuses the kernel scratch
}
