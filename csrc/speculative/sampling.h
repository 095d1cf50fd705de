// The target's sampling distribution (temperature, top-k, top-p) and draws from it. Plain and
// speculative decoding must share these definitions for sampling to be lossless.
#pragma once
#include <cstdint>
#include <vector>

#include "speculative/rng.h"

namespace eyas::speculative {

struct SamplingParams {
  float temperature = 0.0f;  // <= 0: greedy (argmax)
  int32_t top_k = 0;         // <= 0: off
  float top_p = 1.0f;        // >= 1: off
};

// Throws std::invalid_argument "[op] ..." for non-finite temperature or top_p outside (0, 1].
void check_sampling(const char* op, const SamplingParams& p);

// Throws std::invalid_argument "[op] ..." when x[n] holds a NaN (naming its index) or only -inf (no
// token can be drawn). Vectorized: a sampled step checks a whole vocabulary row.
void check_logits_row(const char* op, const float* x, int64_t n);

// First index of the maximum (NaNs ignored, all-NaN rows give 0): the CPU argmax kernel's row, the
// tie-break plain greedy decoding uses.
int32_t argmax_row(const float* logits, int64_t n);

// probs[n] (double) = softmax(logits / T) restricted to the top_k most likely tokens (ties: lower
// id first) and renormalised, then to the smallest prefix of them (by probability desc) whose mass
// reaches top_p; renormalised (llama.cpp's and vLLM's order of filters). Requires temperature > 0.
// Only the top_k, or the nucleus' candidates, are ranked: no sort of the whole vocabulary.
void target_probs(const float* logits, int64_t n, const SamplingParams& p, std::vector<double>& probs);

// One token from logits[n]: argmax_row when greedy, else the inverse-CDF draw from target_probs' row
// with one uniform of rng, scanning ids in order (so a draw is a pure function of the rng state), without
// building that row: probabilities are divided only as the scan reaches them, and a filtered row's draw
// visits its kept ids alone, in id order. Plain decoding, the first token and accept_tree (the target's
// token at each node it visits) use it.
// top_prob (optional): set to the largest probability of that row, the most a drafted token can be
// accepted with at this position (a sampled draft lands when the draw equals it): the speculative
// policy's bound on acceptance, measured on every plain step. Greedy rows give 1.
int32_t sample_token(const float* logits, int64_t n, const SamplingParams& p, Rng& rng, double* top_prob = nullptr);

// sample_token's token for the uniform u in [0, 1) that its rng would have given (a test hook: draws at the
// exact edges of the cumulative distribution, where the fast scan hands over to the exact one).
int32_t sample_token_at(const float* logits, int64_t n, const SamplingParams& p, double u);

}  // namespace eyas::speculative
