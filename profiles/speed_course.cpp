#include "profiles/speed_course.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/control/draws.h"
#include "engine/control/policy_params.h"  // ConfigError

namespace servelab {

namespace {

constexpr double kMinCorrelation = 0.1;  // lags correlated less are noise in a short series
constexpr size_t kMinPasses = 20;
constexpr double kMaxShare = 0.95;

// Rank-based normal scores of xs: the (rank + 0.5) / n quantiles, ties in index order.
std::vector<double> normal_scores(const std::vector<double>& xs) {
  std::vector<size_t> order(xs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return xs[a] < xs[b]; });
  std::vector<double> z(xs.size());
  for (size_t r = 0; r < order.size(); ++r)
    z[order[r]] = normal_quantile((double(r) + 0.5) / double(xs.size()));
  return z;
}

// Autocorrelation of z at `lag` (z has mean ~0 and variance ~1 by construction, but both are
// taken from the scores themselves).
double autocorrelation(const std::vector<double>& z, size_t lag) {
  const double n = double(z.size());
  const double mean = std::accumulate(z.begin(), z.end(), 0.0) / n;
  double var = 0, cov = 0;
  for (double v : z) var += (v - mean) * (v - mean);
  for (size_t i = 0; i + lag < z.size(); ++i) cov += (z[i] - mean) * (z[i + lag] - mean);
  return (cov / (n - double(lag))) / (var / n);
}

}  // namespace

void SpeedDrift::validate() const {
  if (!(share >= 0 && share < 1))
    throw ConfigError("speed_drift: share must be in [0, 1), got " + std::to_string(share));
  if (share > 0 && !(tau > 0 && std::isfinite(tau)))
    throw ConfigError("speed_drift: tau must be a positive time, got " + std::to_string(tau));
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double normal_quantile(double p) {
  double lo = -40, hi = 40;  // bisection: 100 halvings take the bracket below 1e-28
  for (int i = 0; i < 100 && hi - lo > 1e-12; ++i) {
    const double mid = 0.5 * (lo + hi);
    (normal_cdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

SpeedDrift fit_speed_drift(const std::vector<Time>& starts, const std::vector<double>& costs) {
  SpeedDrift d;
  const size_t n = std::min(starts.size(), costs.size());
  if (n < kMinPasses) return d;
  const double spacing = (starts[n - 1] - starts[0]) / double(n - 1);
  if (!(spacing > 0)) return d;
  const std::vector<double> z =
      normal_scores(std::vector<double>(costs.begin(), costs.begin() + std::ptrdiff_t(n)));
  // Least squares of log(correlation) on lag, over the lags before the first weak one.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  size_t m = 0;
  for (size_t lag = 1; lag < n / 4; ++lag, ++m) {
    const double r = autocorrelation(z, lag);
    if (!(r > kMinCorrelation)) break;
    const double x = double(lag), y = std::log(r);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  if (m < 2) return d;
  const double slope = (double(m) * sxy - sx * sy) / (double(m) * sxx - sx * sx);
  const double intercept = (sy - slope * sx) / double(m);
  const double duration = spacing * double(n - 1);
  d.share = std::min(kMaxShare, std::exp(intercept));
  d.tau = slope < 0 ? std::min(duration, -spacing / slope) : duration;
  return d;
}

SpeedCourse::SpeedCourse(SpeedDrift drift, uint64_t seed) : drift_(drift), rng_(seed) {
  drift_.validate();
}

double SpeedCourse::standard_normal() { return servelab::standard_normal(rng_); }

double SpeedCourse::score_at(Time t) {
  if (!started_) {
    x_ = standard_normal();  // the course starts anywhere in its stationary spread
    started_ = true;
  } else if (t > last_) {
    const double a = std::exp(-(t - last_) / drift_.tau);
    x_ = a * x_ + std::sqrt(1 - a * a) * standard_normal();
  }
  last_ = std::max(last_, t);
  return std::sqrt(drift_.share) * x_ + std::sqrt(1 - drift_.share) * standard_normal();
}

double SpeedCourse::cost(const ModelProfile& p, uint32_t b, CostNoise noise, double z) {
  const double mean = p.batch_latency(b);
  if (noise == CostNoise::None) return mean;
  if (noise == CostNoise::Empirical) {
    const BatchCost& best = p.nearest_measured(b);
    if (!best.samples.empty() && best.mean > 0) {
      std::vector<double>& s = sorted_[&best];
      if (s.empty()) {
        s = best.samples;
        std::sort(s.begin(), s.end());
      }
      const size_t i =
          std::min(s.size() - 1, size_t(normal_cdf(z) * double(s.size())));
      return s[i] * (mean / best.mean);
    }
  }
  const double x = mean + p.batch_stddev(b) * z;
  return x > 0 ? x : mean;
}

}  // namespace servelab
