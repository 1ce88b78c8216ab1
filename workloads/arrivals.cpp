// Arrival processes: closed loop think times, Poisson, constant rate, Rafiki sine, trace replay,
// and their registry (DLIS's bursts here; the bursty ones, gamma and MMPP, in
// bursty_arrivals.cpp).
#include "workloads/arrivals.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/huge_pages.h"
#include "workloads/bursty_arrivals.h"
#include "workloads/open_times.h"
#include "workloads/random.h"
#include "workloads/trace_reader.h"

namespace servelab::workloads::detail {
namespace {

[[noreturn]] void fail(const std::string& what) { arrival_error(what); }

// --- checks, one per type ---

void validate_closed(const ArrivalSpec& spec) {
  if (spec.concurrency == 0) fail("concurrency must be at least 1");
  require_seconds(spec.think_time, "think time");
}

void validate_rate(const ArrivalSpec& spec) { require_rate(spec.rate, "rate", spec.type); }

void validate_sine(const ArrivalSpec& spec) {
  require_rate(spec.peak_base, "peak_base", spec.type);
  require_positive(spec.period, "period", spec.type);
  require_seconds(spec.period, "period");
  if (!std::isfinite(spec.noise) || spec.noise < 0) fail("noise must be non-negative");
  if (!std::isfinite(spec.interval) || spec.interval < 0)
    fail("interval must be non-negative (0: period/1000)");
  require_seconds(spec.interval, "interval");
}

void validate_bursts(const ArrivalSpec& spec) {
  require_rate(spec.rate, "rate", spec.type);
  if (spec.burst == 0) fail("burst must be at least 1");
  require_seconds(spec.burst_span, "burst_ms / 1000");
  if (spec.burst_span >= spec.burst / spec.rate)
    fail("a burst's span (burst_ms) must be shorter than the bursts' mean spacing, burst / rate = " +
         number_text(spec.burst / spec.rate * 1e3) + " ms");
}

void validate_trace(const ArrivalSpec& spec) {
  if (spec.trace_file.empty()) fail("type trace needs 'file'");
  require_positive(spec.time_scale, "time_scale", spec.type);
  require_seconds(spec.window_start, "window_start_s");
  require_seconds(spec.window_end, "window_end_s");
  if (spec.window_end > 0 && spec.window_end <= spec.window_start)
    fail("window_end_s must be after window_start_s (or 0: to the trace's end)");
}

// --- streams, one per type ---

class ClosedThinkTimes final : public TimeStream {
 public:
  ClosedThinkTimes(const ArrivalSpec& spec, uint64_t count)
      : mean_(spec.think_time), rng_(spec.seed), limit_(count) {}
  bool next(double& t) override {
    if (!limit_.room()) return false;
    limit_.take();
    t = mean_ > 0 ? rng_.exponential(mean_) : 0.0;
    return true;
  }

 private:
  double mean_;
  Rng rng_;
  CountLimit limit_;
};

class PoissonTimes final : public OpenTimes {
 public:
  PoissonTimes(const ArrivalSpec& spec, uint64_t max_requests, double duration)
      : OpenTimes(max_requests, duration), mean_gap_(1.0 / spec.rate), rng_(spec.seed) {}

 private:
  bool draw(double& t) override {
    t = t_ += rng_.exponential(mean_gap_);
    return true;
  }
  double mean_gap_;
  Rng rng_;
  double t_ = 0;
};

class ConstantTimes final : public OpenTimes {
 public:
  ConstantTimes(const ArrivalSpec& spec, uint64_t max_requests, double duration)
      : OpenTimes(max_requests, duration), rate_(spec.rate) {}

 private:
  bool draw(double& t) override {
    t = static_cast<double>(i_++) / rate_;
    return true;
  }
  double rate_;
  uint64_t i_ = 0;
};

// Interval by interval (arrivals.h): an interval's requests, then the next interval's count.
// A request at or past the duration ends the schedule (the next interval starts past it).
class SineTimes final : public OpenTimes {
 public:
  SineTimes(const ArrivalSpec& spec, uint64_t max_requests, double duration)
      : OpenTimes(max_requests, duration), spec_(spec), rate_(sine_rate(spec.peak_base)),
        delta_(spec.interval > 0 ? spec.interval : spec.period / 1000.0), rng_(spec.seed) {}

 private:
  bool draw(double& t) override {
    while (m_ == c_)
      if (!next_interval()) return false;
    t = start_ + (static_cast<double>(m_++) + 0.5) * delta_ / count_;
    return true;
  }
  bool next_interval() {
    start_ = static_cast<double>(j_++) * delta_;
    if (duration() > 0 && start_ >= duration()) return false;
    double factor = 1.0;
    if (spec_.noise > 0) factor = std::max(0.0, 1.0 + spec_.noise * rng_.normal());
    carry_ += delta_ * rate_.at(start_ + delta_ / 2, spec_.period) * factor;
    count_ = std::floor(carry_);
    carry_ -= count_;
    c_ = static_cast<uint64_t>(count_);
    m_ = 0;
    return true;
  }
  ArrivalSpec spec_;
  SineRate rate_;
  double delta_;
  Rng rng_;
  uint64_t j_ = 0;  // the next interval
  double start_ = 0, carry_ = 0, count_ = 0;
  uint64_t c_ = 0, m_ = 0;  // the current interval's requests, and those given
};

// A burst's requests evenly over its span; the next burst starts the span plus an exponential
// gap later (mean burst / rate less the span), so bursts never overlap and times only grow.
class BurstTimes final : public OpenTimes {
 public:
  BurstTimes(const ArrivalSpec& spec, uint64_t max_requests, double duration)
      : OpenTimes(max_requests, duration), burst_(spec.burst), span_(spec.burst_span),
        mean_gap_(spec.burst / spec.rate - spec.burst_span), rng_(spec.seed) {}

 private:
  bool draw(double& t) override {
    if (m_ == burst_) {
      start_ += span_ + rng_.exponential(mean_gap_);
      m_ = 0;
    }
    t = start_ + span_ * static_cast<double>(m_++) / burst_;
    return true;
  }
  uint32_t burst_;
  double span_, mean_gap_;
  Rng rng_;
  double start_ = 0;
  uint32_t m_ = 0;  // requests of the current burst given
};

class TraceTimes final : public OpenTimes {
 public:
  TraceTimes(const ArrivalSpec& spec, uint64_t max_requests, double duration)
      : OpenTimes(max_requests, duration), times_(read_trace_times(spec.trace_file)),
        scale_(spec.time_scale), start_(spec.window_start),
        end_(spec.window_end > 0 ? spec.window_end : HUGE_VAL) {
    i_ = static_cast<size_t>(std::lower_bound(times_.begin(), times_.end(), start_) -
                             times_.begin());
  }

 private:
  bool draw(double& t) override {
    if (i_ == times_.size() || times_[i_] >= end_) return false;
    t = (times_[i_++] - start_) * scale_;
    return true;
  }
  std::vector<double> times_;  // sorted, from 0
  double scale_, start_, end_;
  size_t i_ = 0;
};

template <class Stream>
std::unique_ptr<TimeStream> open_stream(const ArrivalSpec& spec, uint64_t max_requests,
                                        double duration) {
  return std::make_unique<Stream>(spec, max_requests, duration);
}

std::unique_ptr<TimeStream> closed_stream(const ArrivalSpec& spec, uint64_t count) {
  return std::make_unique<ClosedThinkTimes>(spec, count);
}

std::vector<double> drain(TimeStream& stream, uint64_t expected) {
  std::vector<double> times;
  reserve_huge(times, expected);
  for (double t; stream.next(t);) times.push_back(t);
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
       .think_times = closed_stream},
      {.name = "poisson",
       .help = "open loop, exponential gaps: rate (requests/s)",
       .keys = {number_key("rate", &A::rate)},
       .validate = validate_rate,
       .send_times = open_stream<PoissonTimes>,
       .peak_rate = [](const ArrivalSpec& a) { return a.rate; }},
      {.name = "constant",
       .help = "open loop, evenly spaced: request i at i / rate (requests/s)",
       .keys = {number_key("rate", &A::rate)},
       .validate = validate_rate,
       .send_times = open_stream<ConstantTimes>,
       .peak_rate = [](const ArrivalSpec& a) { return a.rate; }},
      {.name = "gamma",
       .help = "open loop, gamma-distributed gaps: rate (requests/s), cv (coefficient of "
               "variation of the gaps; 1 = exponential, above 1 bursty)",
       .keys = {number_key("rate", &A::rate), number_key("cv", &A::cv)},
       .validate = validate_gamma,
       .send_times = gamma_stream,
       .peak_rate = [](const ArrivalSpec& a) { return a.rate; }},
      {.name = "mmpp",
       .help = "open loop, Markov-modulated Poisson: state_rates (requests/s per state), "
               "state_dwell_s (mean sojourn per state, s); starts in state 0, then moves to "
               "another state uniformly",
       .keys = {number_list_key("state_rates", &A::state_rates),
                number_list_key("state_dwell_s", &A::state_dwell)},
       .validate = validate_mmpp,
       .send_times = mmpp_stream,
       .peak_rate = mmpp_peak_rate},
      {.name = "sine",
       .help = "Rafiki 7.2 sine-shaped rate: peak_base (requests/s; peak 1.1 x), period_s (s), "
               "noise (sd of the per-interval factor), interval_s (s, 0 = period_s / 1000)",
       .keys = {number_key("peak_base", &A::peak_base), number_key("period_s", &A::period),
                number_key("noise", &A::noise), number_key("interval_s", &A::interval)},
       .validate = validate_sine,
       .send_times = open_stream<SineTimes>,
       .peak_rate = [](const ArrivalSpec& a) { return 1.1 * a.peak_base; }},
      {.name = "bursts",
       .help = "open loop in bursts (DLIS): burst requests evenly over burst_ms (ms), the "
               "bursts' starts burst_ms plus an exponential gap apart; rate (requests/s) is the "
               "mean",
       .keys = {number_key("rate", &A::rate), count_key("burst", &A::burst, 1, 1'000'000),
                number_key("burst_ms", &A::burst_span, 1000)},
       .validate = validate_bursts,
       .send_times = open_stream<BurstTimes>,
       .peak_rate = [](const ArrivalSpec& a) { return a.rate; }},
      {.name = "trace",
       .help = "replays the times of a CSV's first column: file (path), time_scale (gap "
               "multiplier, 0.5 = twice the rate), window_start_s and window_end_s (the part "
               "of the trace replayed, trace seconds; window_end_s 0 = to its end)",
       .keys = {text_key("file", &A::trace_file), number_key("time_scale", &A::time_scale),
                number_key("window_start_s", &A::window_start),
                number_key("window_end_s", &A::window_end)},
       .validate = validate_trace,
       .send_times = open_stream<TraceTimes>,
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

std::unique_ptr<TimeStream> send_time_stream(const ArrivalSpec& spec, uint64_t max_requests,
                                             double duration) {
  const ArrivalProcess& process = arrival_process(spec.type);
  process.validate(spec);
  if (!process.send_times) fail("closed-loop arrivals have no send times");
  if (max_requests > kMaxRequests)
    fail("requests must be at most " + std::to_string(kMaxRequests));
  if (!std::isfinite(duration) || duration < 0) fail("duration must be non-negative");
  if (!process.ends_by_itself && max_requests == 0 && duration == 0)
    fail("an open-loop workload needs 'requests' or 'duration'");
  return process.send_times(spec, max_requests, duration);
}

void fail_if_capped(const ArrivalSpec& spec, uint64_t max_requests, uint64_t produced) {
  if (max_requests == 0 && produced >= kMaxRequests && !arrival_process(spec.type).ends_by_itself)
    fail("the schedule would exceed " + std::to_string(kMaxRequests) +
         " requests; lower the rate or the duration");
}

std::unique_ptr<TimeStream> think_time_stream(const ArrivalSpec& spec, uint64_t count) {
  const ArrivalProcess& process = arrival_process(spec.type);
  process.validate(spec);
  if (!process.think_times) fail("open-loop arrivals have no think times");
  return process.think_times(spec, count);
}

std::vector<double> generate_send_times(const ArrivalSpec& spec, uint64_t max_requests,
                                        double duration) {
  auto stream = send_time_stream(spec, max_requests, duration);
  // The count decides the length (a trace may be shorter): reserve it at once.
  const bool by_count = duration <= 0 && !arrival_process(spec.type).ends_by_itself;
  std::vector<double> times = drain(*stream, by_count ? max_requests : 0);
  fail_if_capped(spec, max_requests, times.size());
  return times;
}

uint64_t rows_before_window(const ArrivalSpec& arrival, const AccessSpec& access) {
  if (arrival.type != "trace" || access.type != "trace" || arrival.window_start <= 0 ||
      access.trace_file != arrival.trace_file)
    return 0;
  const std::vector<double> times = read_trace_times(arrival.trace_file);
  return static_cast<uint64_t>(
      std::lower_bound(times.begin(), times.end(), arrival.window_start) - times.begin());
}

std::vector<double> generate_think_times(const ArrivalSpec& spec, uint64_t count) {
  return drain(*think_time_stream(spec, count), count);
}

}  // namespace servelab::workloads::detail
