// The median of measured samples (the profiler's probes): the middle one, the mean of the two
// middle ones for an even count. Header-only, no state.
#pragma once

#include <algorithm>
#include <vector>

namespace servelab {

// The median of `v` (taken by value, sorted here); 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace servelab
