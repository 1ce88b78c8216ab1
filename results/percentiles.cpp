#include "results/percentiles.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "results/order_select.h"

namespace servelab::results {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Below this many values a sort is as fast as the bucket select's passes; below the second,
// the bucket select is as fast as a sample's bracketing.
constexpr size_t kSortBelow = 4096;
constexpr size_t kSampleFrom = 65536;

struct Rank {
  size_t lo, hi;  // the two closest ranks (0-based)
  double frac;    // of the way from lo to hi
};

Rank rank_of(double p, size_t n) {
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * double(n - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  return {lo, std::min(lo + 1, n - 1), rank - double(lo)};
}

}  // namespace

double percentile_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return kNaN;
  const Rank r = rank_of(p, sorted.size());
  return sorted[r.lo] + (sorted[r.hi] - sorted[r.lo]) * r.frac;
}

namespace {

std::vector<double> of_sorted(const std::vector<double>& sorted, std::span<const double> ps) {
  std::vector<double> out;
  for (double p : ps) out.push_back(percentile_sorted(sorted, p));
  return out;
}

}  // namespace

std::vector<double> percentiles_of(std::vector<double>& values, std::span<const double> ps) {
  if (values.size() < kSortBelow) {
    std::sort(values.begin(), values.end());
    return of_sorted(values, ps);
  }
  return percentiles_of(VectorChunks(values), ps);
}

std::vector<double> percentiles_of(const ValueChunks& values, std::span<const double> ps) {
  const size_t n = values.size();
  if (n < kSortBelow) {
    std::vector<double> sorted;
    values.for_each([&](std::span<const double> c) { sorted.insert(sorted.end(), c.begin(), c.end()); });
    std::sort(sorted.begin(), sorted.end());
    return of_sorted(sorted, ps);
  }
  std::vector<size_t> ranks;
  for (double p : ps) {
    const Rank r = rank_of(p, n);
    ranks.push_back(r.lo);
    ranks.push_back(r.hi);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::optional<std::vector<double>> bracketed;
  if (n >= kSampleFrom) bracketed = detail::sample_select(values, ranks);
  const std::vector<double> at = bracketed ? *bracketed : detail::bucket_select(values, ranks);
  auto value_at = [&](size_t rank) {
    return at[size_t(std::lower_bound(ranks.begin(), ranks.end(), rank) - ranks.begin())];
  };
  std::vector<double> out;
  for (double p : ps) {
    const Rank r = rank_of(p, n);
    const double a = value_at(r.lo), b = value_at(r.hi);
    out.push_back(a + (b - a) * r.frac);
  }
  return out;
}

}  // namespace servelab::results
