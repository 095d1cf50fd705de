// Weights repacked for the CPU matmul kernels, cached with the weight's Buffer.
#pragma once
#include <memory>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "metal/kernel_args.h"

namespace eyas::cpu {

// The repack of weight view `w` that matmul(a, ...) reads on the current instruction set, built on
// a miss; nullptr when the kernels read no repack for this call (or for a Q8_0 weight's first call).
// The pointer keeps the repack alive for the call even if another thread replaces it meanwhile.
std::shared_ptr<const uint8_t> weight_pack(const MatmulArgs& a, const Tensor& w, ThreadPool& pool);

// The repack that matmuls built of `w` as an [n, k] weight of type `wtype` (through this Buffer or another one
// over the same bytes), or nullptr (this never builds one): a tied token embedding reads its rows from the
// head's repack, since the file pages under it have left the resident set (page_out) and a row read there
// would fault back in from the file.
std::shared_ptr<const uint8_t> existing_weight_pack(const Tensor& w, int32_t wtype, int64_t n, int64_t k);

}  // namespace eyas::cpu
