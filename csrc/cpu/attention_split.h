// Attention of a few queries over a long shared context, split across threads by keys and columns.
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// The call of attention() (same arguments) when it is a few queries (a decode step or a small tree
// verify) whose shared committed prefix is long and several threads run: then done here and true.
// Otherwise nothing is done and the result is false.
bool attention_split(const AttentionArgs& a, const float* q, const void* k, const void* v, bool kv_f16,
                     const uint8_t* mask, float* o, ThreadPool& pool);

}  // namespace eyas::cpu
