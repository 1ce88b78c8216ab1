#include "calibration/terms/speed_course.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "engine/control/draws.h"
#include "engine/control/policy_params.h"  // ConfigError

namespace servelab {

namespace {

constexpr double kMinCorrelation = 0.1;  // below this at the first lags: no course to fit
constexpr size_t kMinPasses = 20;
constexpr double kMaxShare = 0.95;
constexpr int kGrid = 24;                // correlation times tried per course

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

// Autocorrelation of z at lags 1..max_lag (index 0 unused).
std::vector<double> autocorrelations(const std::vector<double>& z, size_t max_lag) {
  const double n = double(z.size());
  const double mean = std::accumulate(z.begin(), z.end(), 0.0) / n;
  double var = 0;
  for (double v : z) var += (v - mean) * (v - mean);
  std::vector<double> r(max_lag + 1, 0);
  for (size_t lag = 1; lag <= max_lag; ++lag) {
    double cov = 0;
    for (size_t i = 0; i + lag < z.size(); ++i) cov += (z[i] - mean) * (z[i + lag] - mean);
    r[lag] = (cov / (n - double(lag))) / (var / n);
  }
  return r;
}

struct Fit {
  SpeedDrift drift;
  double error = std::numeric_limits<double>::infinity();
};

// Shares a, b >= 0 of exp(-lag dt / t1) and exp(-lag dt / t2) that best match r (least
// squares, non-negative), and the squared error left. Lag k weighs 1/k: every octave of lags
// counts alike, so the many long lags (mostly noise in a series of seconds) do not outweigh
// the first few, where a fast course shows.
Fit fit_shares(const std::vector<double>& r, Time dt, Time t1, Time t2) {
  double s11 = 0, s12 = 0, s22 = 0, y1 = 0, y2 = 0;
  for (size_t k = 1; k < r.size(); ++k) {
    const double e1 = std::exp(-double(k) * dt / t1), e2 = std::exp(-double(k) * dt / t2);
    const double w = 1.0 / double(k);
    s11 += w * e1 * e1, s12 += w * e1 * e2, s22 += w * e2 * e2;
    y1 += w * e1 * r[k], y2 += w * e2 * r[k];
  }
  const double det = s11 * s22 - s12 * s12;
  double a = det > 0 ? (y1 * s22 - y2 * s12) / det : 0;
  double b = det > 0 ? (y2 * s11 - y1 * s12) / det : 0;
  if (a < 0 || det <= 0) a = 0, b = std::max(0.0, y2 / s22);
  if (b < 0) b = 0, a = std::max(0.0, y1 / s11);
  if (a + b > kMaxShare) {
    // On the line a + b = kMaxShare: a = t, least squares in t, within [0, kMaxShare].
    // Sum of w (r - cap e2 - t (e1 - e2))^2 is least at t = <r - cap e2, e1 - e2> / |e1 - e2|^2.
    const double num = (y1 - y2) - kMaxShare * (s12 - s22);
    const double den = s11 - 2 * s12 + s22;
    a = den > 0 ? std::clamp(num / den, 0.0, kMaxShare) : kMaxShare / 2;
    b = kMaxShare - a;
  }
  Fit f;
  f.drift.fast = {a, t1};
  f.drift.slow = {b, t2};
  f.error = 0;
  for (size_t k = 1; k < r.size(); ++k) {
    const double e = f.drift.correlation(double(k) * dt) - r[k];
    f.error += e * e / double(k);
  }
  return f;
}

}  // namespace

double SpeedDrift::correlation(Time dt) const {
  double c = 0;
  if (fast.share > 0) c += fast.share * std::exp(-dt / fast.tau);
  if (slow.share > 0) c += slow.share * std::exp(-dt / slow.tau);
  return c;
}

void SpeedDrift::validate() const {
  for (const Course* c : {&fast, &slow}) {
    if (!(c->share >= 0))
      throw ConfigError("speed_drift: a share must be >= 0, got " + std::to_string(c->share));
    if (c->share > 0 && !(c->tau > 0 && std::isfinite(c->tau)))
      throw ConfigError("speed_drift: tau must be a positive time, got " + std::to_string(c->tau));
  }
  if (!(fast.share + slow.share < 1))
    throw ConfigError("speed_drift: shares must sum to less than 1, got " +
                      std::to_string(fast.share + slow.share));
  for (size_t w = 0; w < spread.size(); ++w) {
    const Window& x = spread[w];
    if (!(x.window > 0 && std::isfinite(x.window)) || (w > 0 && !(x.window > spread[w - 1].window)))
      throw ConfigError("speed_drift: spread windows must be positive and increasing");
    if (x.quantiles.empty()) throw ConfigError("speed_drift: a spread window needs quantiles");
    for (size_t i = 0; i < x.quantiles.size(); ++i) {
      if (!(x.quantiles[i] > 0 && std::isfinite(x.quantiles[i])))
        throw ConfigError("speed_drift: spread values must be positive, got " +
                          std::to_string(x.quantiles[i]));
      if (i > 0 && x.quantiles[i] < x.quantiles[i - 1])
        throw ConfigError("speed_drift: spread must not decrease (a list of quantiles)");
    }
  }
}

namespace {

// Quantiles `q` at probabilities (i + 0.5) / n, interpolated at u; the ends beyond them.
double quantile_at(const std::vector<double>& q, double u) {
  const double x = u * double(q.size()) - 0.5;
  if (!(x > 0)) return q.front();
  const size_t i = size_t(x);
  if (i + 1 >= q.size()) return q.back();
  return q[i] + (x - double(i)) * (q[i + 1] - q[i]);
}

}  // namespace

double SpeedDrift::spread_at(Time length, double u) const {
  if (spread.empty()) return 1;
  if (!(length > spread.front().window)) return quantile_at(spread.front().quantiles, u);
  if (!(length < spread.back().window)) return quantile_at(spread.back().quantiles, u);
  size_t hi = 1;
  while (spread[hi].window < length) ++hi;
  const Window &a = spread[hi - 1], &b = spread[hi];
  const double f = std::log(length / a.window) / std::log(b.window / a.window);
  return (1 - f) * quantile_at(a.quantiles, u) + f * quantile_at(b.quantiles, u);
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

namespace {

// Quantiles of xs at probabilities (i + 0.5) / points, interpolated, each divided by `by`.
std::vector<double> quantiles_over(std::vector<double> xs, size_t points, double by) {
  std::sort(xs.begin(), xs.end());
  std::vector<double> q;
  for (size_t i = 0; i < points; ++i) {
    const double x = (double(i) + 0.5) / double(points) * double(xs.size() - 1);
    const size_t j = std::min(xs.size() - 2, size_t(x));
    q.push_back((xs[j] + (x - double(j)) * (xs[j + 1] - xs[j])) / by);
  }
  return q;
}

// The spread per window (speed_course.h): sliding means of m = 1, 2, 4, ... consecutive
// costs while the series holds 8 windows, each window `m` mean spacings long.
std::vector<SpeedDrift::Window> fit_spread(const std::vector<double>& costs, Time spacing) {
  std::vector<double> sorted = costs;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  if (!(median > 0) || !(spacing > 0)) return {};
  std::vector<SpeedDrift::Window> out;
  for (size_t m = 1; 8 * m <= costs.size(); m *= 2) {
    std::vector<double> means;
    double sum = 0;
    for (size_t i = 0; i < costs.size(); ++i) {
      sum += costs[i];
      if (i >= m) sum -= costs[i - m];
      if (i + 1 >= m) means.push_back(sum / double(m));
    }
    out.push_back({spacing * double(m), quantiles_over(std::move(means), kSpreadPoints, median)});
  }
  return out;
}

SpeedDrift fit_courses(const std::vector<Time>& starts, const std::vector<double>& costs,
                       size_t n) {
  const Time dt = (starts[n - 1] - starts[0]) / double(n - 1);  // mean spacing of passes
  if (!(dt > 0)) return {};
  const size_t max_lag = std::min<size_t>(n / 4, 400);
  const std::vector<double> r = autocorrelations(
      normal_scores(std::vector<double>(costs.begin(), costs.begin() + std::ptrdiff_t(n))), max_lag);
  if (!(std::max({r[1], r[2], r[3]}) > kMinCorrelation)) return {};
  // Correlation times from one pass (shorter ones barely reach the first lag, so their
  // share is not measurable) to the longest lag, geometrically.
  std::vector<Time> taus;
  for (int i = 0; i < kGrid; ++i)
    taus.push_back(dt * std::pow(double(max_lag), double(i) / (kGrid - 1)));
  Fit best;
  for (size_t i = 0; i < taus.size(); ++i)
    for (size_t j = i + 1; j < taus.size(); ++j) {
      Fit f = fit_shares(r, dt, taus[i], taus[j]);
      if (f.error < best.error) best = f;
    }
  SpeedDrift& d = best.drift;
  if (!(d.fast.share > 0)) d.fast = {};
  if (!(d.slow.share > 0)) d.slow = {};
  return d;
}

}  // namespace

SpeedDrift fit_speed_drift(const std::vector<Time>& starts, const std::vector<double>& costs) {
  const size_t n = std::min(starts.size(), costs.size());
  if (n < kMinPasses) return {};
  SpeedDrift d = fit_courses(starts, costs, n);
  const Time spacing = (starts[n - 1] - starts[0]) / double(n - 1);
  d.spread = fit_spread(std::vector<double>(costs.begin(), costs.begin() + std::ptrdiff_t(n)),
                        spacing);
  return d;
}

SpeedCourse::SpeedCourse(SpeedDrift drift, uint64_t seed) : drift_(drift), rng_(seed) {
  drift_.validate();
}

double SpeedCourse::standard_normal() { return servelab::standard_normal(rng_); }

// Each course moves by its exact Ornstein-Uhlenbeck step over t - last_; both start anywhere
// in their stationary spread.
double SpeedCourse::score_at(Time t) {
  auto step = [&](double& x, Time tau) {
    const double a = std::exp(-(t - last_) / tau);
    x = a * x + std::sqrt(1 - a * a) * standard_normal();
  };
  if (!started_) {
    fast_ = standard_normal();
    slow_ = standard_normal();
    started_ = true;
  } else if (t > last_) {
    if (drift_.fast.share > 0) step(fast_, drift_.fast.tau);
    if (drift_.slow.share > 0) step(slow_, drift_.slow.tau);
  }
  last_ = std::max(last_, t);
  const double own = 1 - drift_.fast.share - drift_.slow.share;
  return std::sqrt(drift_.fast.share) * fast_ + std::sqrt(drift_.slow.share) * slow_ +
         std::sqrt(own) * standard_normal();
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
      const double u = normal_cdf(z);
      if (!drift_.spread.empty())
        return s[s.size() / 2] * drift_.spread_at(mean, u) * (mean / best.mean);
      const size_t i = std::min(s.size() - 1, size_t(u * double(s.size())));
      return s[i] * (mean / best.mean);
    }
  }
  const double x = mean + p.batch_stddev(b) * z;
  return x > 0 ? x : mean;
}

}  // namespace servelab
