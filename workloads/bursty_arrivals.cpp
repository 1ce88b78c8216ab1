#include "workloads/bursty_arrivals.h"

#include <algorithm>
#include <cmath>

#include "workloads/open_times.h"
#include "workloads/random.h"

namespace servelab::workloads::detail {
namespace {

// Marsaglia and Tsang (2000), "A simple method for generating gamma variables": unit scale.
double gamma_unit(Rng& rng, double shape) {
  if (shape < 1) {
    const double boosted = gamma_unit(rng, shape + 1);
    return boosted * std::pow(rng.uniform_open0(), 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = rng.normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = rng.uniform_open0();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

class GammaTimes final : public OpenTimes {
 public:
  GammaTimes(const ArrivalSpec& spec, uint64_t max_requests, double duration)
      : OpenTimes(max_requests, duration), shape_(1.0 / (spec.cv * spec.cv)),
        scale_(1.0 / (spec.rate * shape_)), rng_(spec.seed) {}

 private:
  bool draw(double& t) override {
    t = t_ += scale_ * gamma_unit(rng_, shape_);
    return true;
  }
  double shape_, scale_;
  Rng rng_;
  double t_ = 0;
};

// Poisson arrivals within each sojourn; by memorylessness a gap that crosses the sojourn's
// end is dropped and drawing restarts at the end in the next state.
class MmppTimes final : public OpenTimes {
 public:
  MmppTimes(const ArrivalSpec& spec, uint64_t max_requests, double duration)
      : OpenTimes(max_requests, duration), rates_(spec.state_rates), dwell_(spec.state_dwell),
        rng_(spec.seed) {
    state_end_ = rng_.exponential(dwell_[0]);
  }

 private:
  bool draw(double& t) override {
    for (;;) {
      const double rate = rates_[state_];
      const double next = rate > 0 ? t_ + rng_.exponential(1.0 / rate) : state_end_;
      if (next < state_end_) {
        t = t_ = next;
        return true;
      }
      t_ = state_end_;
      if (duration() > 0 && t_ >= duration()) return false;  // no arrival before the end
      move_state();
    }
  }
  void move_state() {
    const size_t others = rates_.size() - 1;
    if (others > 0) {
      const size_t pick = static_cast<size_t>(rng_.below(others));
      state_ = pick >= state_ ? pick + 1 : pick;
    }
    state_end_ = t_ + rng_.exponential(dwell_[state_]);
  }
  std::vector<double> rates_, dwell_;
  Rng rng_;
  size_t state_ = 0;
  double t_ = 0, state_end_ = 0;
};

}  // namespace

void validate_gamma(const ArrivalSpec& spec) {
  require_rate(spec.rate, "rate", spec.type);
  // cv up to 100 (shape 1e-4): beyond, nearly every gap rounds to 0 at a microsecond.
  if (!std::isfinite(spec.cv) || spec.cv < 0.01 || spec.cv > 100)
    arrival_error("cv must be in 0.01..100 for gamma, got " + number_text(spec.cv));
}

void validate_mmpp(const ArrivalSpec& spec) {
  const size_t n = spec.state_rates.size();
  if (n == 0 || n > kMaxMmppStates)
    arrival_error("state_rates must list 1.." + std::to_string(kMaxMmppStates) +
                  " rates (requests/s), got " + std::to_string(n));
  if (spec.state_dwell.size() != n)
    arrival_error("state_dwell_s has " + std::to_string(spec.state_dwell.size()) +
                  " entries but state_rates has " + std::to_string(n));
  for (size_t i = 0; i < n; ++i) {
    const double r = spec.state_rates[i];
    if (r != 0) require_rate(r, "state_rates[i]", spec.type);
    require_positive(spec.state_dwell[i], "state_dwell_s[i]", spec.type);
    require_seconds(spec.state_dwell[i], "state_dwell_s[i]");
  }
  if (mmpp_peak_rate(spec) <= 0) arrival_error("mmpp needs a state with a positive rate");
}

double mmpp_peak_rate(const ArrivalSpec& spec) {
  double peak = 0;
  for (double r : spec.state_rates) peak = std::max(peak, r);
  return peak;
}

std::unique_ptr<TimeStream> gamma_stream(const ArrivalSpec& spec, uint64_t max_requests,
                                         double duration) {
  return std::make_unique<GammaTimes>(spec, max_requests, duration);
}

std::unique_ptr<TimeStream> mmpp_stream(const ArrivalSpec& spec, uint64_t max_requests,
                                        double duration) {
  return std::make_unique<MmppTimes>(spec, max_requests, duration);
}

}  // namespace servelab::workloads::detail
