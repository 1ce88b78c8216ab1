// Exact percentiles of a run's latencies (numpy's default "linear" method) without sorting
// them: a summary of a million requests asks for six order statistics, and sorting or
// repeated nth_element over all of them took a tenth of a summary-only simulation.
#pragma once

#include <span>
#include <vector>

namespace servelab::results {

// numpy's linear percentile of sorted values: rank p/100*(n-1), interpolated between the two
// closest ranks; p is clamped to [0, 100]. NaN for no values.
double percentile_sorted(const std::vector<double>& sorted, double p);

// The same numbers as percentile_sorted over the sorted values, one per p (any order), from
// `values` in any order (reordered here). Large inputs go through a bucket select: passes
// over the values count them in 65,536 buckets of their order-preserving bit patterns' range;
// the buckets holding the wanted ranks are gathered and searched with nth_element when small,
// and bucketed again over their own range when large, so that memory stays a few hundred KB
// whatever the input (the copies of the least value, where simulations tie, are counted, not
// copied). Values must not be NaN.
std::vector<double> percentiles_of(std::vector<double>& values, std::span<const double> ps);

}  // namespace servelab::results
