#include "cpu/moe.h"

#include <cmath>
#include <vector>

namespace eyas::cpu {

void moe_route(int64_t T, int64_t E, int k, bool renorm, const float* logits, int32_t* idx, float* w) {
  std::vector<float> p(static_cast<size_t>(E));
  std::vector<char> taken(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t) {
    const float* l = logits + t * E;
    float mx = l[0];
    for (int64_t e = 1; e < E; ++e) mx = std::fmax(mx, l[e]);
    float sum = 0.0f;
    for (int64_t e = 0; e < E; ++e) sum += (p[e] = std::exp(l[e] - mx));
    for (int64_t e = 0; e < E; ++e) p[e] /= sum;
    std::fill(taken.begin(), taken.end(), 0);
    float ksum = 0.0f;
    for (int j = 0; j < k; ++j) {
      int64_t best = -1;
      for (int64_t e = 0; e < E; ++e)
        if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
      taken[best] = 1;
      idx[t * k + j] = int32_t(best);
      w[t * k + j] = p[best];
      ksum += p[best];
    }
    if (renorm)
      for (int j = 0; j < k; ++j) w[t * k + j] /= ksum;
  }
}

}  // namespace eyas::cpu
