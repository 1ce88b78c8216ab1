// What a model's shared weights cost (engine/store/blob_usage.h computes it).
#pragma once

#include <cstddef>
#include <cstdint>

namespace servelab::store {

struct WeightBytes {
  uint64_t logical = 0;  // bytes of the model's distinct blobs
  uint64_t unique = 0;   // of those, bytes of blobs no other model uses
  uint64_t shared = 0;   // logical - unique
};

// What tidying a weight store after a restart removed (engine/store/holders.h).
struct Tidied {
  size_t marks = 0;  // this holder's marks of models it no longer has
  size_t blobs = 0;  // blobs no model of any process holds any more
};

}  // namespace servelab::store
