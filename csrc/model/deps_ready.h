// Temporary: the model compiles only once ops/matmul.h and ops/embedding.h have landed.
#pragma once
#if __has_include("ops/matmul.h") && __has_include("ops/embedding.h")
#define EYAS_MODEL_READY 1
#endif
