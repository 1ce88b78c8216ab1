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
  bool on() const { return fast.share > 0 || slow.share > 0; }
  // Score correlation of two batches dt apart.
  double correlation(Time dt) const;
  // Shares >= 0 summing to < 1, taus > 0 and finite where a share is; throws ConfigError.
  void validate() const;
};

// Fits the model above to one batch size's costs measured back to back (`starts`: each pass's
// start, seconds, increasing; `costs`: its duration). Rank-based normal scores (any monotone
// cost distribution fits); their autocorrelation over lags up to a quarter of the series is
// matched by least squares over a grid of (tau1, tau2), with the shares for each pair from
// non-negative least squares (their sum at most 0.95). No drift when the series has fewer
// than 20 passes or none of its first three lags correlates above 0.1.
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
  // A batch of `b` from `p` at score z, by `noise`: the mean (None); the quantile Phi(z) of
  // the nearest measured size's samples scaled to batch_latency(b) (Empirical with samples);
  // else mean + stddev * z, the mean where that is not above 0 (Normal).
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
