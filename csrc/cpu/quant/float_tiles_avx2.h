// AVX2 columns for float weights (F32 / F16 / BF16) in register tiles: dot_lanes16's 16 lanes of
// an output as two ymm halves (lanes 0-7 and 8-15), one FMA per half and 16-element chunk of k, k
// ascending, the tail by lane, then the 8/4/2/1 fold; so the bits equal every other table's at any
// tile shape. R rows x C columns a pass (16 ymm registers: 2 x 2 outputs, or 1 x 4 for decode).
// Included after cpu/softmax_exp.h (fold16_avx2, dot_lanes16's fold). (No include guard: included once
// per ISA namespace.)

// Weight elements [i, i + 8) as floats (exact).
template <WKind K>
static inline __m256 load_w8(const uint8_t* w, int64_t i) {
  if constexpr (K == kF32) return _mm256_loadu_ps(reinterpret_cast<const float*>(w) + i);
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(w) + i));
  if constexpr (K == kF16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));  // BF16
}

// Element i of a weight row as a float (the tail).
template <WKind K>
static inline float load_w1(const uint8_t* w, int64_t i) {
  if constexpr (K == kF32) return reinterpret_cast<const float*>(w)[i];
  const uint16_t h = reinterpret_cast<const uint16_t*>(w)[i];
  if constexpr (K == kF16) return H2F(h);
  return bf2f(h);
}

// y[t0 .. t0 + R, n .. n + C) of job j. The next C weight rows are requested into L2 a line per row
// as the pass goes (they follow these in memory; decode streams them from DRAM).
template <WKind K, int R, int C>
static void float_tile2(const Job& j, int64_t n, int64_t t0) {
  const int64_t k = j.k;
  const uint8_t* w[C];
  const float* x[R];
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) w[c] = j.w + (n + c) * j.wrow;
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) x[r] = j.act.x + (t0 + r) * k;
  __m256 lo[R][C], hi[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) lo[r][c] = hi[r][c] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    if ((i * kFloatElemBytes[K]) % 64 == 0)
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) _mm_prefetch(reinterpret_cast<const char*>(w[c] + C * j.wrow + i * kFloatElemBytes[K]), _MM_HINT_T1);
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const __m256 w0 = load_w8<K>(w[c], i), w1 = load_w8<K>(w[c], i + 8);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        lo[r][c] = _mm256_fmadd_ps(_mm256_loadu_ps(x[r] + i), w0, lo[r][c]);
        hi[r][c] = _mm256_fmadd_ps(_mm256_loadu_ps(x[r] + i + 8), w1, hi[r][c]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      float lanes[16];
      _mm256_storeu_ps(lanes, lo[r][c]);
      _mm256_storeu_ps(lanes + 8, hi[r][c]);
      for (int64_t e = i; e < k; ++e) lanes[e & 15] = __builtin_fmaf(x[r][e], load_w1<K>(w[c], e), lanes[e & 15]);
      j.y[(t0 + r) * j.n + n + c] = fold16_avx2(_mm256_loadu_ps(lanes), _mm256_loadu_ps(lanes + 8));
    }
}

template <WKind K, int R, int C>
static void float_rows2(const Job& j, int64_t n0, int64_t n1, int64_t t0) {
  int64_t n = n0;
  for (; n + C <= n1; n += C) float_tile2<K, R, C>(j, n, t0);
  for (; n < n1; ++n) float_tile2<K, R, 1>(j, n, t0);
}

// Activation rows a block, as on AVX-512: a block's rows stay in L2 while the thread's columns pass.
constexpr int64_t kFloatBlockBytes2 = int64_t(256) << 10;
// Weight bytes of a block of columns: they stay in L2 while every row pair of the block passes.
constexpr int64_t kFloatColBlockBytes2 = int64_t(256) << 10;

template <WKind K>
void cols_float_tiles_avx2(const Job& j, int64_t n0, int64_t n1) {
  if (j.t == 1) return float_rows2<K, 1, 4>(j, n0, n1, 0);
  // A row pair's activations stay in L1 while a block of columns (its weights in L2) passes over them:
  // with 16 registers a tile reuses each activation load only twice, so reading them from L2 for every
  // column pair bound the tile by L2 (F16 2560x960, T = 128: 9.1 -> 6.1 ms).
  const int64_t block = std::max<int64_t>(2, kFloatBlockBytes2 / (j.k * 4) / 2 * 2);
  const int64_t col_block = std::max<int64_t>(2, kFloatColBlockBytes2 / int64_t(j.wrow) / 2 * 2);
  for (int64_t b0 = 0; b0 < j.t; b0 += block) {
    const int64_t b1 = std::min(j.t, b0 + block);
    for (int64_t c0 = n0; c0 < n1; c0 += col_block) {
      const int64_t c1 = std::min(n1, c0 + col_block);
      int64_t t = b0;
      for (; t + 2 <= b1; t += 2) float_rows2<K, 2, 2>(j, c0, c1, t);
      if (t < b1) float_rows2<K, 1, 2>(j, c0, c1, t);
    }
  }
}
