// Arguments of the quantized matmul (y[T,N] = x[T,K] . w[N,K]^T) and the embedding gather.
#pragma once

struct MatmulArgs {
  EYAS_I32 rows;   // T: activation rows
  EYAS_I32 n;      // N: output columns = weight rows
  EYAS_I32 k;      // K: reduction length (a multiple of the weight's block size)
  EYAS_I32 wtype;  // weight type, a GGML type id (eyas::DType)
};

struct EmbeddingArgs {
  EYAS_I32 rows;   // T: ids to gather
  EYAS_I32 vocab;  // V: rows of the table
  EYAS_I32 k;      // row length
  EYAS_I32 wtype;  // table type, a GGML type id (eyas::DType)
};
