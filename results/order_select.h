// Exact order statistics of doubles without sorting them, for percentiles_of()
// (results/percentiles.h). Internal to results/; the tests call both selects directly.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "results/value_chunks.h"

namespace servelab::results::detail {

// A double's bits, mapped so that unsigned order is numeric order (-0.0 just below +0.0;
// they compare equal as doubles, and either one is the value at its rank). NaN has no place.
inline uint64_t order_key(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits >> 63 ? ~bits : bits | (uint64_t(1) << 63);
}

inline double value_of_key(uint64_t key) {
  const uint64_t bits = key >> 63 ? key & ~(uint64_t(1) << 63) : ~key;
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// The values at `ranks` (0-based, ascending, distinct, each < values.size()): what a full
// sort would put there. Passes over the values count them in 65,536 buckets of their keys'
// range; the buckets holding a wanted rank are gathered when small and bucketed again over
// their own range when large (a few hundred KB, whatever the input). Any input; 3 to 8
// passes over it.
std::vector<double> bucket_select(const ValueChunks& values, const std::vector<size_t>& ranks);

// The same, from brackets around each rank that a sorted sample of the values gives: one
// pass counts the values below, at and inside each bracket and copies those strictly inside
// (a few per cent of them), which are then searched. Nothing when a bracket missed its rank
// or held too many values (a sample unlike the whole, or ties inside a bracket): the caller
// then uses bucket_select. The sample's positions come from a fixed seed; values not
// contiguous in memory are read twice (the sample, then the pass).
std::optional<std::vector<double>> sample_select(const ValueChunks& values,
                                                 const std::vector<size_t>& ranks);

}  // namespace servelab::results::detail
