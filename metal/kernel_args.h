// Kernel argument structs shared by the C++ host, the CPU kernels and the Metal kernels.
// Plain fixed-width fields only, so the layout is identical in C++ and MSL.
#pragma once
#ifdef __METAL_VERSION__
#define EYAS_I32 int
#define EYAS_U32 uint
#else
#include <cstdint>
#define EYAS_I32 int32_t
#define EYAS_U32 uint32_t
#endif

struct RmsNormArgs {
  EYAS_I32 rows;  // number of rows
  EYAS_I32 dim;   // elements per row
  float eps;
};
#include "args/rope.h"
#include "args/elementwise.h"
#include "args/softmax.h"
#include "args/attention.h"
#include "args/kv.h"
#include "args/matmul.h"
