// Per-call activation scalars of the repacked Q4_0 / Q4_1 / Q8_0 kernels (q4pack.h), shared by the
// AVX2, AVX-512 and AMX tables. Plain C++: each ISA TU includes it inside its own namespace.
// (No include guard: included once per ISA namespace.)

// Per-call activation scalars by [row][block]: d (the quantizer's), and the min/offset term's
// factor: d * float(s) for Q4_1, 8 * s for Q4_0 (both exactly as dot_generic.h forms them).
struct Q4Rows {
  const float* dx;
  const float* dsx;
  const int32_t* off;
};

// Activation scalars of every row by [row][block] (see Q4Rows), in `mem` (3 * T * K / 32 words).
// off holds the weights' unsigned offset times sum(x_q), taken back out of the integer dot: 8 for
// Q4_0's nibbles, 16 for Q5_0's, 128 for the Q8_0 pack's int8 + 128 (Q4_1 / Q5_1 do not use it).
template <WKind K>
static Q4Rows q4_rows(const Job& j, uint8_t* mem) {
  constexpr int32_t zero_point = K == kQ8_0 ? 128 : K == kQ5_0 ? 16 : 8;
  const int64_t nb = j.k / 32, rb = j.t * nb;
  float* dx = reinterpret_cast<float*>(mem);
  float* dsx = dx + rb;
  int32_t* off = reinterpret_cast<int32_t*>(dsx + rb);
  for (int64_t t = 0; t < j.t; ++t)
    for (int64_t b = 0; b < nb; ++b) {
      const float d = j.act.d[t * j.act.d_per_row + b];
      const int32_t s = j.act.s[t * j.act.s_per_row + b];
      dx[t * nb + b] = d;
      dsx[t * nb + b] = d * float(s);
      off[t * nb + b] = zero_point * s;
    }
  return {dx, dsx, off};
}

