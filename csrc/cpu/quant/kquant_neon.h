// NEON (dot-product extension) K-quant block terms; included after dot_generic.h in TUs compiled
// for ARMv8.2-A+dotprod. Quants are at most 63, so SDOT takes them as signed bytes; each sub-block
// dot is scaled in the vector (exact int32) and the block's lanes are summed once, which gives
// kblock_term's integers in another (exact) order; the float epilogue is kblock_term's.
// (No include guard: included once per ISA namespace.)

template <WKind K>
inline float kblock_term_neon(const KBlock& u, const XRow& x, int64_t b) {
  const int8_t* xq = x.qs + b * 256;
  const int8_t* q = reinterpret_cast<const int8_t*>(u.q);
  const int32_t* bs = x.s + b * 16;
  int32x4_t acc = vdupq_n_s32(0);
  if constexpr (K == kQ6_K) {
    for (int g = 0; g < 16; ++g)
      acc = vmlaq_n_s32(acc, vdotq_s32(vdupq_n_s32(0), vld1q_s8(q + 16 * g), vld1q_s8(xq + 16 * g)), u.sc[g]);
    int32_t c = 0;  // quants are stored + 32
    for (int g = 0; g < 16; ++g) c += u.sc[g] * bs[g];
    return float(vaddvq_s32(acc) - 32 * c) * (u.d * x.d[b]);
  } else {
    for (int s = 0; s < 8; ++s) {
      const int32x4_t d = vdotq_s32(vdotq_s32(vdupq_n_s32(0), vld1q_s8(q + 32 * s), vld1q_s8(xq + 32 * s)),
                                    vld1q_s8(q + 32 * s + 16), vld1q_s8(xq + 32 * s + 16));
      acc = vmlaq_n_s32(acc, d, u.sc[s]);
    }
    int32_t i2 = 0;
    for (int j = 0; j < 8; ++j) i2 += u.mn[j] * (bs[2 * j] + bs[2 * j + 1]);
    return float(vaddvq_s32(acc)) * (u.d * x.d[b]) - float(i2) * (u.dmin * x.d[b]);
  }
}
