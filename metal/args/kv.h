// KV cache copy arguments (included from metal/kernel_args.h).
#pragma once

struct KvCopyArgs {
  EYAS_I32 rows;        // T new rows (kv_write) or m moved slots (kv_move_rows)
  EYAS_I32 n_kv_heads;  // Hkv
  EYAS_I32 head_dim;    // D
  EYAS_I32 capacity;    // slots per head
  EYAS_I32 dst_start;   // first destination slot
};
