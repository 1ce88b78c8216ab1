// Exact percentiles of a run's latencies (numpy's default "linear" method) without sorting
// them: a summary of a million requests asks for six order statistics, and sorting or
// repeated nth_element over all of them took a tenth of a summary-only simulation.
#pragma once

#include <span>
#include <vector>

#include "results/value_chunks.h"

namespace servelab::results {

// numpy's linear percentile of sorted values: rank p/100*(n-1), interpolated between the two
// closest ranks; p is clamped to [0, 100]. NaN for no values.
double percentile_sorted(const std::vector<double>& sorted, double p);

// The same numbers as percentile_sorted over the sorted values, one per p (any order), from
// `values` in any order (small inputs are sorted in place). Large inputs are not sorted: a
// sorted sample brackets each wanted rank and one pass counts and copies what lies inside
// the brackets (results/order_select.h); where the brackets miss, a bucket select of a few
// passes finds them in a few hundred KB whatever the input. Values must not be NaN.
std::vector<double> percentiles_of(std::vector<double>& values, std::span<const double> ps);
// The same from values read in chunks (a run's latency stores, some of them on disk).
std::vector<double> percentiles_of(const ValueChunks& values, std::span<const double> ps);

}  // namespace servelab::results
