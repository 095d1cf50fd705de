#include "speculative/runtime_drafter.h"

namespace eyas::speculative {

RuntimeDrafter::RuntimeDrafter(const char* op, int max_context, std::shared_ptr<Device> device)
    : op_(op), device_(std::move(device)), max_context_(max_context) {
  if (!device_) fail(op_, "no device");
  if (max_context < 1 || max_context > (1 << 24)) fail(op_, "max_context must be in [1, 2^24]");
}

int RuntimeDrafter::check_pairs(const Tensor& features, const char* name, int64_t width, const Tensor& tokens,
                                int vocab) const {
  check_dtype(op_, name, features, DType::F32);
  check_ndim(op_, name, features, 2);
  check_dim(op_, name, features, 1, width);
  check_dtype(op_, "tokens", tokens, DType::I32);
  check_ndim(op_, "tokens", tokens, 1);
  check_dim(op_, "tokens", tokens, 0, features.dim(0));
  const int T = int(features.dim(0));
  if (T < 1) fail(op_, std::string("ingest needs at least one (") + name + ", token) pair");
  if (int64_t(length_) + T > max_context_)
    fail(op_, "ingest of " + std::to_string(T) + " pairs at length " + std::to_string(length_) +
                  " exceeds max_context " + std::to_string(max_context_));
  const int32_t* tk = tokens.data<int32_t>();
  for (int i = 0; i < T; ++i)
    if (tk[i] < 0 || tk[i] >= vocab) fail(op_, "token id " + std::to_string(tk[i]) + " outside the vocabulary");
  return T;
}

void RuntimeDrafter::set_root(const float* h, int64_t H, const float* logits, int64_t V, int32_t token) {
  root_h_.assign(h, h + H);
  root_logits_.assign(logits, logits + V);
  root_token_ = token;
}

void RuntimeDrafter::check_tree(const TreePolicy& policy, int levels, int tree_slots) const {
  if (root_token_ < 0) fail(op_, "expand needs a preceding ingest");
  if (int64_t(policy.top_k) * levels > tree_slots)
    fail(op_, "the tree's top_k x depth exceeds the drafter's " + std::to_string(tree_slots) + " tree slots");
}

void RuntimeDrafter::truncate(int n) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (n < 0 || n > length_) fail(op_, "truncate(" + std::to_string(n) + ") outside [0, " + std::to_string(length_) + "]");
  length_ = n;
  root_token_ = -1;  // the root's state belongs to the dropped suffix
}

}  // namespace eyas::speculative
