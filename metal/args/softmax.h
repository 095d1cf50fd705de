// Softmax / argmax / top-k arguments (included from metal/kernel_args.h).
#pragma once

struct SoftmaxArgs {
  EYAS_I32 rows;
  EYAS_I32 cols;
  float temperature;  // > 0; logits are divided by it
  EYAS_I32 log;       // 1: log-softmax
};

struct TopkArgs {
  EYAS_I32 rows;
  EYAS_I32 cols;
  EYAS_I32 k;  // 1 <= k <= cols
};
