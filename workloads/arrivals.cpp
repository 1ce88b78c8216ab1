// Arrival processes: closed loop think times, Poisson, constant rate, Rafiki sine, trace replay.
#include "workloads/arrivals.h"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "workloads/random.h"
#include "workloads/trace_reader.h"

namespace servelab::workloads::detail {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("workload.arrival: " + what);
}

void require_positive(double v, const char* name, const std::string& type) {
  if (!std::isfinite(v) || v <= 0)
    fail(std::string(name) + " must be a positive number for " + type + ", got " +
         std::to_string(v));
}

// Appends while both limits allow; returns false once the schedule is complete.
bool room(const std::vector<double>& times, uint64_t max_requests) {
  return times.size() < (max_requests ? max_requests : kMaxRequests);
}

std::vector<double> sine_times(const ArrivalSpec& spec, uint64_t max_requests, double duration) {
  const SineRate rate = sine_rate(spec.peak_base);
  const double delta = spec.interval > 0 ? spec.interval : spec.period / 1000.0;
  Rng rng(spec.seed);
  std::vector<double> times;
  double carry = 0;
  for (uint64_t j = 0;; ++j) {
    const double start = static_cast<double>(j) * delta;
    if (duration > 0 && start >= duration) break;
    double factor = 1.0;
    if (spec.noise > 0) factor = std::max(0.0, 1.0 + spec.noise * rng.normal());
    carry += delta * rate.at(start + delta / 2, spec.period) * factor;
    const double count = std::floor(carry);
    carry -= count;
    const auto c = static_cast<uint64_t>(count);
    for (uint64_t m = 0; m < c; ++m) {
      const double t = start + (static_cast<double>(m) + 0.5) * delta / count;
      if (duration > 0 && t >= duration) break;
      if (!room(times, max_requests)) return times;
      times.push_back(t);
    }
    if (!room(times, max_requests)) return times;
  }
  return times;
}

}  // namespace

double SineRate::at(double t, double period) const {
  return k * std::sin(2.0 * std::numbers::pi * t / period) + b;
}

SineRate sine_rate(double peak_base) {
  // Subtracting equation 8 from 9: k * (1 - cos(0.2*pi)) = 0.1 * peak_base.
  SineRate r;
  r.k = 0.1 * peak_base / (1.0 - std::cos(0.2 * std::numbers::pi));
  r.b = 1.1 * peak_base - r.k;
  return r;
}

void validate_arrival(const ArrivalSpec& spec) {
  const std::string& t = spec.type;
  if (t == "closed") {
    if (spec.concurrency == 0) fail("concurrency must be at least 1");
    if (!std::isfinite(spec.think_time) || spec.think_time < 0)
      fail("think time must be a non-negative number");
  } else if (t == "poisson" || t == "constant") {
    require_positive(spec.rate, "rate", t);
  } else if (t == "sine") {
    require_positive(spec.peak_base, "peak_base", t);
    require_positive(spec.period, "period", t);
    if (!std::isfinite(spec.noise) || spec.noise < 0) fail("noise must be non-negative");
    if (!std::isfinite(spec.interval) || spec.interval < 0)
      fail("interval must be non-negative (0: period/1000)");
  } else if (t == "trace") {
    if (spec.trace_file.empty()) fail("type trace needs 'file'");
    require_positive(spec.time_scale, "time_scale", t);
  } else {
    fail("unknown type '" + t + "' (expected closed, poisson, constant, sine, trace)");
  }
}

std::vector<double> generate_send_times(const ArrivalSpec& spec, uint64_t max_requests,
                                        double duration) {
  validate_arrival(spec);
  if (spec.type == "closed") fail("closed-loop arrivals have no send times");
  if (max_requests > kMaxRequests)
    fail("requests must be at most " + std::to_string(kMaxRequests));
  if (!std::isfinite(duration) || duration < 0) fail("duration must be non-negative");
  if (spec.type != "trace" && max_requests == 0 && duration == 0)
    fail("an open-loop workload needs 'requests' or 'duration'");
  std::vector<double> times;
  if (spec.type == "trace") {
    for (double t : read_trace_times(spec.trace_file)) {
      t *= spec.time_scale;
      if ((duration > 0 && t >= duration) || !room(times, max_requests)) break;
      times.push_back(t);
    }
  } else if (spec.type == "sine") {
    times = sine_times(spec, max_requests, duration);
  } else {
    Rng rng(spec.seed);
    const bool poisson = spec.type == "poisson";
    double t = 0;
    for (uint64_t i = 0; room(times, max_requests); ++i) {
      t = poisson ? t + rng.exponential(1.0 / spec.rate) : static_cast<double>(i) / spec.rate;
      if (duration > 0 && t >= duration) break;
      times.push_back(t);
    }
  }
  if (max_requests == 0 && times.size() >= kMaxRequests && spec.type != "trace")
    fail("the schedule would exceed " + std::to_string(kMaxRequests) +
         " requests; lower the rate or the duration");
  return times;
}

std::vector<double> generate_think_times(const ArrivalSpec& spec, uint64_t count) {
  validate_arrival(spec);
  std::vector<double> think(count, 0.0);
  if (spec.think_time > 0) {
    Rng rng(spec.seed);
    for (auto& t : think) t = rng.exponential(spec.think_time);
  }
  return think;
}

}  // namespace servelab::workloads::detail
