// The spec dict of docs/model_spec.md -> model::ModelSpec, and a weights dict -> model::WeightMap: shared by
// every binding that builds model layers (the Transformer, the MTP drafter).
#pragma once
#include <nanobind/nanobind.h>

#include "model/spec.h"

namespace eyas::bind {

// Fails "[op] spec: missing key 'x'" / "has the wrong type" for a malformed dict.
model::ModelSpec parse_model_spec(const char* op, nanobind::dict spec);
// name -> (array, dtype id, shape), as bind::parse_weight reads each entry.
model::WeightMap parse_weights(const char* op, nanobind::dict weights);

}  // namespace eyas::bind
