// Arrival processes: closed loop think times, Poisson, constant rate, Rafiki sine, trace replay,
// and their registry.
#include "workloads/arrivals.h"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "common/huge_pages.h"
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

// --- checks, one per type ---

void validate_closed(const ArrivalSpec& spec) {
  if (spec.concurrency == 0) fail("concurrency must be at least 1");
  if (!std::isfinite(spec.think_time) || spec.think_time < 0)
    fail("think time must be a non-negative number");
}

void validate_rate(const ArrivalSpec& spec) { require_positive(spec.rate, "rate", spec.type); }

void validate_sine(const ArrivalSpec& spec) {
  require_positive(spec.peak_base, "peak_base", spec.type);
  require_positive(spec.period, "period", spec.type);
  if (!std::isfinite(spec.noise) || spec.noise < 0) fail("noise must be non-negative");
  if (!std::isfinite(spec.interval) || spec.interval < 0)
    fail("interval must be non-negative (0: period/1000)");
}

void validate_trace(const ArrivalSpec& spec) {
  if (spec.trace_file.empty()) fail("type trace needs 'file'");
  require_positive(spec.time_scale, "time_scale", spec.type);
}

// --- generators, one per type ---

std::vector<double> closed_think_times(const ArrivalSpec& spec, uint64_t count) {
  std::vector<double> think(count, 0.0);
  if (spec.think_time > 0) {
    Rng rng(spec.seed);
    for (auto& t : think) t = rng.exponential(spec.think_time);
  }
  return think;
}

std::vector<double> poisson_times(const ArrivalSpec& spec, uint64_t max_requests,
                                  double duration) {
  Rng rng(spec.seed);
  std::vector<double> times;
  if (duration <= 0) reserve_huge(times, max_requests);  // the count decides the length
  for (double t = 0; room(times, max_requests);) {
    t += rng.exponential(1.0 / spec.rate);
    if (duration > 0 && t >= duration) break;
    times.push_back(t);
  }
  return times;
}

std::vector<double> constant_times(const ArrivalSpec& spec, uint64_t max_requests,
                                   double duration) {
  std::vector<double> times;
  if (duration <= 0) reserve_huge(times, max_requests);  // the count decides the length
  for (uint64_t i = 0; room(times, max_requests); ++i) {
    const double t = static_cast<double>(i) / spec.rate;
    if (duration > 0 && t >= duration) break;
    times.push_back(t);
  }
  return times;
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

std::vector<double> trace_times(const ArrivalSpec& spec, uint64_t max_requests,
                                double duration) {
  std::vector<double> times;
  for (double t : read_trace_times(spec.trace_file)) {
    t *= spec.time_scale;
    if ((duration > 0 && t >= duration) || !room(times, max_requests)) break;
    times.push_back(t);
  }
  return times;
}

using A = ArrivalSpec;

}  // namespace

// The registry. A new arrival process is one entry here plus its generator above: parsing,
// key checks, validation, generation, to_yaml and --help all follow from the entry.
const std::vector<ArrivalProcess>& arrival_registry() {
  static const std::vector<ArrivalProcess> registry = {
      {.name = "closed",
       .help = "closed loop: concurrency (requests in flight), each sent after an exponential "
               "think time of mean think_time_ms (ms, 0 = none)",
       .keys = {count_key("concurrency", &A::concurrency, 1, 1'000'000),
                number_key("think_time_ms", &A::think_time, 1000)},
       .validate = validate_closed,
       .think_times = closed_think_times},
      {.name = "poisson",
       .help = "open loop, exponential gaps: rate (requests/s)",
       .keys = {number_key("rate", &A::rate)},
       .validate = validate_rate,
       .send_times = poisson_times},
      {.name = "constant",
       .help = "open loop, evenly spaced: request i at i / rate (requests/s)",
       .keys = {number_key("rate", &A::rate)},
       .validate = validate_rate,
       .send_times = constant_times},
      {.name = "sine",
       .help = "Rafiki 7.2 sine-shaped rate: peak_base (requests/s; peak 1.1 x), period_s (s), "
               "noise (sd of the per-interval factor), interval_s (s, 0 = period_s / 1000)",
       .keys = {number_key("peak_base", &A::peak_base), number_key("period_s", &A::period),
                number_key("noise", &A::noise), number_key("interval_s", &A::interval)},
       .validate = validate_sine,
       .send_times = sine_times},
      {.name = "trace",
       .help = "replays the times of a CSV's first column: file (path), time_scale (gap "
               "multiplier, 0.5 = twice as fast)",
       .keys = {text_key("file", &A::trace_file), number_key("time_scale", &A::time_scale)},
       .validate = validate_trace,
       .send_times = trace_times,
       .ends_by_itself = true},
  };
  return registry;
}

const ArrivalProcess& arrival_process(const std::string& type) {
  return require_type(arrival_registry(), type, "workload.arrival");
}

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

void validate_arrival(const ArrivalSpec& spec) { arrival_process(spec.type).validate(spec); }

std::vector<double> generate_send_times(const ArrivalSpec& spec, uint64_t max_requests,
                                        double duration) {
  const ArrivalProcess& process = arrival_process(spec.type);
  process.validate(spec);
  if (!process.send_times) fail("closed-loop arrivals have no send times");
  if (max_requests > kMaxRequests)
    fail("requests must be at most " + std::to_string(kMaxRequests));
  if (!std::isfinite(duration) || duration < 0) fail("duration must be non-negative");
  if (!process.ends_by_itself && max_requests == 0 && duration == 0)
    fail("an open-loop workload needs 'requests' or 'duration'");
  std::vector<double> times = process.send_times(spec, max_requests, duration);
  if (max_requests == 0 && times.size() >= kMaxRequests && !process.ends_by_itself)
    fail("the schedule would exceed " + std::to_string(kMaxRequests) +
         " requests; lower the rate or the duration");
  return times;
}

std::vector<double> generate_think_times(const ArrivalSpec& spec, uint64_t count) {
  const ArrivalProcess& process = arrival_process(spec.type);
  process.validate(spec);
  if (!process.think_times) fail("open-loop arrivals have no think times");
  return process.think_times(spec, count);
}

}  // namespace servelab::workloads::detail
