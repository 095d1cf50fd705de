// AVX-512 columns for float weights (F32 / F16 / BF16) in register tiles of R activation rows x C
// weight rows. Every output keeps dot_lanes16's 16 lanes in one zmm (one FMA per 16-element chunk
// of k, k ascending, the tail masked) and folds them 8/4/2/1 at the end, so the bits are the same
// for every R, C, T and thread count; the tile only lets each converted weight vector serve R rows
// and each activation vector C columns (the per-dot loop converted a weight row once per row).
// Included after simd_avx512.h (load_w16) and cpu/softmax_exp.h (fold16_avx512, dot_lanes16's fold).
// (No include guard: included once per ISA namespace.)

// y[t0 .. t0 + R, n .. n + C) of job j, the C weight rows at w (rows `wrow` bytes apart). Stream:
// they come from the model's weights (not a converted panel), so the next C rows are requested early.
template <WKind K, int R, int C, bool Stream>
static void float_tile(const Job& j, const uint8_t* w0, size_t wrow, int64_t n, int64_t t0) {
  const int64_t k = j.k;
  const uint8_t* w[C];
  const float* x[R];
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c) w[c] = w0 + c * wrow;
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) x[r] = j.act.x + (t0 + r) * k;
  __m512 acc[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    if constexpr (Stream)  // the next pass's rows (the following C rows) into L2, a line per row
      if ((i * kFloatElemBytes[K]) % 64 == 0)
#pragma GCC unroll 16
        for (int c = 0; c < C; ++c) _mm_prefetch(reinterpret_cast<const char*>(w[c] + C * wrow + i * kFloatElemBytes[K]), _MM_HINT_T1);
    __m512 xv[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) xv[r] = _mm512_loadu_ps(x[r] + i);
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      const __m512 wv = load_w16<K>(w[c], i, 0xffff);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) acc[r][c] = _mm512_fmadd_ps(xv[r], wv, acc[r][c]);
    }
  }
  if (i < k) {  // the tail's lanes only; the others keep their bits, as in dot_lanes16
    const __mmask16 m = __mmask16((1u << (k - i)) - 1);
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      const __m512 wv = load_w16<K>(w[c], i, m);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) acc[r][c] = _mm512_mask3_fmadd_ps(_mm512_maskz_loadu_ps(m, x[r] + i), wv, acc[r][c], m);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) j.y[(t0 + r) * j.n + n + c] = fold16_avx512(acc[r][c]);
}

// Rows [t0, t0 + R) against the columns [n, n + cols) whose weight rows start at w.
template <WKind K, int R, int C, bool Stream>
static void float_rows(const Job& j, const uint8_t* w, size_t wrow, int64_t n, int64_t cols, int64_t t0) {
  if (cols == C) return float_tile<K, R, C, Stream>(j, w, wrow, n, t0);
  for (int64_t c = 0; c < cols; ++c) float_tile<K, R, 1, false>(j, w + c * wrow, wrow, n + c, t0);
}

// Activation rows a block: a block's rows (at most kFloatBlockBytes of them) stay in L2 while every
// column of the thread's range passes over them, so weights are read once per block.
constexpr int64_t kFloatBlockBytes = int64_t(256) << 10;
// From this many rows a half-precision panel that fits in L1 as float is converted once and its tiles
// read that (a conversion is two vector ops against the 4 FMAs its vector feeds); with fewer rows the
// conversion's stores and the lost prefetch cost more (cold 2560x960 at T = 8: 390-530 against
// 256-262 us without; at T = 128 2,750-2,840 against 3,220-3,280; K = 2560 even at T = 128).
constexpr int64_t kFloatConvertRows = 32, kFloatPanelBytes = int64_t(32) << 10;

// Rows [t0, t1) in row tiles of R (the last one shorter), each over the columns [n, n + cols).
template <WKind K, int R, int C, bool Stream>
static void float_row_tiles(const Job& j, const uint8_t* w, size_t wrow, int64_t n, int64_t cols, int64_t t0,
                            int64_t t1) {
  int64_t t = t0;
  for (; t + R <= t1; t += R) float_rows<K, R, C, Stream>(j, w, wrow, n, cols, t);
  switch (t1 - t) {
    case 3: float_rows<K, 3, C, Stream>(j, w, wrow, n, cols, t); break;
    case 2: float_rows<K, 2, C, Stream>(j, w, wrow, n, cols, t); break;
    case 1: float_rows<K, 1, C, Stream>(j, w, wrow, n, cols, t); break;
    default: break;
  }
}

// `cols` weight rows from src (K's elements, `wrow` bytes apart) as floats at dst, k apart; exact.
template <WKind K>
static void float_panel(const uint8_t* src, size_t wrow, int64_t cols, int64_t k, float* dst) {
  for (int64_t c = 0; c < cols; ++c, src += wrow, dst += k) {
    int64_t i = 0;
    for (; i + 16 <= k; i += 16) _mm512_storeu_ps(dst + i, load_w16<K>(src, i, 0xffff));
    if (i < k) {
      const __mmask16 m = __mmask16((1u << (k - i)) - 1);
      _mm512_mask_storeu_ps(dst + i, m, load_w16<K>(src, i, m));
    }
  }
}

template <WKind K>
void cols_float_tiles(const Job& j, int64_t n0, int64_t n1) {
  constexpr int kRows = 4, kCols = 6;  // 24 accumulators + 4 activation vectors + 1 weight vector
  if (j.t == 1) {
    int64_t n = n0;
    for (; n + 8 <= n1; n += 8) float_tile<K, 1, 8, true>(j, j.w + n * j.wrow, j.wrow, n, 0);
    for (; n < n1; ++n) float_tile<K, 1, 1, false>(j, j.w + n * j.wrow, j.wrow, n, 0);
    return;
  }
  const bool convert = K != kF32 && j.t >= kFloatConvertRows && kCols * j.k * 4 <= kFloatPanelBytes;
  float* panel = convert ? reinterpret_cast<float*>(thread_scratch<kScratchKernel>(size_t(kCols * j.k) * 4)) : nullptr;
  const int64_t block = std::max<int64_t>(kRows, kFloatBlockBytes / (j.k * 4) / kRows * kRows);
  for (int64_t b0 = 0; b0 < j.t; b0 += block) {
    const int64_t b1 = std::min(j.t, b0 + block);
    for (int64_t n = n0; n < n1; n += kCols) {
      const int64_t cols = std::min<int64_t>(n1 - n, kCols);
      const uint8_t* w = j.w + n * j.wrow;
      if (convert) {
        float_panel<K>(w, j.wrow, cols, j.k, panel);
        float_row_tiles<kF32, kRows, kCols, false>(j, reinterpret_cast<const uint8_t*>(panel), size_t(j.k) * 4, n, cols,
                                                   b0, b1);
      } else {
        float_row_tiles<K, kRows, kCols, true>(j, w, j.wrow, n, cols, b0, b1);
      }
    }
  }
}
