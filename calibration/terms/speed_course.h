// The machine's speed course: on a shared machine the speed moves slowly (other tenants, clock
// changes), so consecutive batches cost alike; drawn independently, as a profile's samples
// otherwise are, a closed loop's latency (a sum of batch costs) spreads far less than it does
// on the machine. The profiler measures the course before any run (a back-to-back series of
// one batch size); the simulator gives each server one and draws every batch's cost at the
// course's current score. A measurement term of the profiler and the simulator, like the
// front-end profile; engine/control knows nothing of it.
//
// Model: each batch's cost is the quantile of its size's measured cost distribution at the
// normal score z = sqrt(a) * X1(t) + sqrt(b) * X2(t) + sqrt(1 - a - b) * e: X1 and X2 are
// stationary Ornstein-Uhlenbeck processes of unit variance, a fast and a slow course with
// correlation times tau1 < tau2 (a CPU's short stretches and a shared machine's phases of a
// second or so), and e an independent standard normal per batch (the pass-to-pass spread).
// Each cost alone is distributed as the profile measured it; two batches dt apart have scores
// correlated by a * exp(-dt / tau1) + b * exp(-dt / tau2).
//
// The spread: a size's samples are measured within a second or so, in one of the machine's
// phases, so they miss its slow phases (passes a third slower for a hundred ms or so, every
// few seconds) that a run of minutes meets. The course's own series is long enough to see
// them, and a pass of length T pays the machine's speed averaged over T: a long batch spans
// slow and fast stretches, a short one can fall inside a slow one. So the spread is kept per
// window: the quantiles of the series' sliding means over windows of 1, 2, 4, ... passes,
// over the series' median; a batch's cost at score z is its size's median times the spread
// at Phi(z) for a window of the batch's mean cost (interpolated in log time), where a profile
// has one.
#pragma once

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "engine/control/cost_profile.h"
#include "engine/control/types.h"

namespace servelab {

struct SpeedDrift {
  struct Course {
    double share = 0;  // of a cost's score variance this course carries
    Time tau = 0;      // its correlation time, seconds (> 0 when share > 0)
  };
  Course fast, slow;   // shares sum to < 1; none: both 0
  // The series' sliding means over `window` seconds, over the series' median, at
  // probabilities (i + 0.5) / n, i = 0..n-1 (non-decreasing, positive).
  struct Window {
    Time window = 0;
    std::vector<double> quantiles;
  };
  std::vector<Window> spread;  // windows increasing; empty: the sizes' own samples spread
  bool has_course() const { return fast.share > 0 || slow.share > 0; }
  bool on() const { return has_course() || !spread.empty(); }
  // The spread for a pass of `length` seconds at probability u in (0, 1): each window's
  // quantiles interpolated at u, the two windows around `length` interpolated in log time
  // (the nearest end beyond them); 1 without a spread.
  double spread_at(Time length, double u) const;
  // Score correlation of two batches dt apart.
  double correlation(Time dt) const;
  // Shares >= 0 summing to < 1, taus > 0 and finite where a share is; throws ConfigError.
  void validate() const;
};

// Quantiles each window of a fitted spread holds.
inline constexpr size_t kSpreadPoints = 100;

// Fits the model above to one batch size's costs measured back to back (`starts`: each pass's
// start, seconds, increasing; `costs`: its duration). Rank-based normal scores (any monotone
// cost distribution fits); their autocorrelation over lags up to a quarter of the series is
// matched by least squares over a grid of (tau1, tau2), with the shares for each pair from
// non-negative least squares (their sum at most 0.95). No course when none of its first three
// lags correlates above 0.1. The spread is kept either way: windows of 1, 2, 4, ... passes
// while the series holds at least 8 of the window. Nothing when the series has fewer than 20
// passes.
SpeedDrift fit_speed_drift(const std::vector<Time>& starts, const std::vector<double>& costs);

// Standard normal quantile of p in (0, 1) (to 1e-12).
double normal_quantile(double p);
// Standard normal distribution function.
double normal_cdf(double z);

// One server's speed course: the scores of its batches in time order, from its own seeded
// stream (the same seed gives the same course). Sorted copies of the profile's samples are
// kept per measured size for the quantiles. Owned by one simulated server; not thread-safe.
class SpeedCourse {
 public:
  SpeedCourse(SpeedDrift drift, uint64_t seed);
  // The score of a batch starting at `t` (non-decreasing from call to call).
  double score_at(Time t);
  // A batch of `b` from `p` at score z, by `noise`: the mean (None); with samples (Empirical),
  // the nearest measured size's median times the spread at Phi(z) for a pass of the batch's
  // mean cost where the drift has one,
  // else that size's quantile Phi(z), either scaled to batch_latency(b); else mean +
  // stddev * z, the mean where that is not above 0 (Normal).
  double cost(const ModelProfile& p, uint32_t b, CostNoise noise, double z);

 private:
  double standard_normal();

  SpeedDrift drift_;
  std::mt19937_64 rng_;
  double fast_ = 0, slow_ = 0;  // the courses' states X1, X2 at last_
  Time last_ = 0;
  bool started_ = false;
  std::unordered_map<const BatchCost*, std::vector<double>> sorted_;  // by measured size
};

}  // namespace servelab
