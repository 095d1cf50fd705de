// Tree attention arguments (included from metal/kernel_args.h); KV layout in docs/kv_cache.md.
#pragma once

struct AttentionArgs {
  EYAS_I32 n_q;         // Tq queries: the last Tq of the Tn new slots
  EYAS_I32 n_new;       // Tn new slots [prefix_len, prefix_len + Tn)
  EYAS_I32 n_heads;     // Hq query heads
  EYAS_I32 n_kv_heads;  // Hkv, divides Hq
  EYAS_I32 head_dim;    // D, a multiple of 16
  EYAS_I32 capacity;    // slots per head in the cache
  EYAS_I32 prefix_len;  // committed slots every query sees
  EYAS_I32 causal;      // 1: no mask, query i sees new slots j <= i
  float scale;          // score = (q . k) * scale
};
