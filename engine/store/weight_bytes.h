// What a model's shared weights cost (engine/store/blob_usage.h computes it).
#pragma once

#include <cstdint>

namespace servelab::store {

struct WeightBytes {
  uint64_t logical = 0;  // bytes of the model's distinct blobs
  uint64_t unique = 0;   // of those, bytes of blobs no other model uses
  uint64_t shared = 0;   // logical - unique
};

}  // namespace servelab::store
