#include "model/views.h"

#include "ops/model_misc.h"

namespace eyas::model {

Tensor rows(const Tensor& t, int64_t r0, int64_t n, std::vector<int64_t> tail) {
  Tensor v = t;
  const int64_t width = t.numel() / t.dim(0);
  v.offset = t.offset + size_t(r0 * width) * sizeof(float);
  v.shape = {n};
  if (tail.empty()) tail = {width};
  v.shape.insert(v.shape.end(), tail.begin(), tail.end());
  return v;
}

Tensor head(const Tensor& t, int64_t n) {
  Tensor v = t;
  v.shape = {n};
  return v;
}

Tensor reshape(const Tensor& t, std::vector<int64_t> shape) {
  Tensor v = t;
  v.shape = std::move(shape);
  return v;
}

void split_cols(Encoder& enc, const Tensor& fused, std::initializer_list<Tensor*> parts) {
  const int64_t t = fused.dim(0);
  int64_t col = 0;
  for (Tensor* p : parts) {
    const int64_t w = p->dim(1);
    if (t == 1) {
      Tensor v = fused;
      v.offset = fused.offset + size_t(col) * sizeof(float);
      v.shape = {1, w};
      *p = v;
    } else {
      ops::copy_cols(enc, fused, int(col), *p, 0, int(w));
    }
    col += w;
  }
}

}  // namespace eyas::model
