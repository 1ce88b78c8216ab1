// Arrival processes: closed loop think times, Poisson, constant rate, Rafiki sine, trace replay,
// and their registry.
#include "workloads/arrivals.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>
#include <sstream>
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

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

void require_positive(double v, const char* name, const std::string& type) {
  if (!std::isfinite(v) || v <= 0)
    fail(std::string(name) + " must be a positive number for " + type + ", got " +
         number_text(v));
}

// A rate whose gaps the clock resolves: kMinRate..kMaxRate requests/s.
void require_rate(double v, const char* name, const std::string& type) {
  require_positive(v, name, type);
  if (v < kMinRate || v > kMaxRate)
    fail(std::string(name) + " must be in " + number_text(kMinRate) + ".." +
         number_text(kMaxRate) + " requests/s for " + type + ", got " + number_text(v) +
         " (a run's times resolve 1 us up to " + number_text(kMaxRunSeconds) + " s)");
}

// Seconds within a run's clock: 0..kMaxRunSeconds.
void require_seconds(double v, const char* name) {
  if (!std::isfinite(v) || v < 0 || v > kMaxRunSeconds)
    fail(std::string(name) + " must be in 0.." + number_text(kMaxRunSeconds) +
         " s (a run's times resolve 1 us up to there), got " + number_text(v));
}

// An open loop's count limit: max_requests, or kMaxRequests where it is 0.
CountLimit open_limit(uint64_t max_requests) {
  return CountLimit(max_requests ? max_requests : kMaxRequests);
}

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

void validate_trace(const ArrivalSpec& spec) {
  if (spec.trace_file.empty()) fail("type trace needs 'file'");
  require_positive(spec.time_scale, "time_scale", spec.type);
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

// An open loop's times end at `duration` (0: never) or at the count limit.
class OpenTimes : public TimeStream {
 public:
  OpenTimes(uint64_t max_requests, double duration)
      : limit_(open_limit(max_requests)), duration_(duration) {}
  bool next(double& t) final {
    if (ended_ || !limit_.room()) return false;
    if (!draw(t) || (duration_ > 0 && t >= duration_)) {
      ended_ = true;
      return false;
    }
    if (!(t <= kMaxRunSeconds))
      fail("a send time passes " + number_text(kMaxRunSeconds) +
           " s, where a run's times no longer resolve 1 us (lower time_scale or the gaps)");
    limit_.take();
    return true;
  }

 protected:
  virtual bool draw(double& t) = 0;  // the next time, duration aside; false: no more
  double duration() const { return duration_; }

 private:
  CountLimit limit_;
  double duration_;
  bool ended_ = false;
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

class TraceTimes final : public OpenTimes {
 public:
  TraceTimes(const ArrivalSpec& spec, uint64_t max_requests, double duration)
      : OpenTimes(max_requests, duration), times_(read_trace_times(spec.trace_file)),
        scale_(spec.time_scale) {}

 private:
  bool draw(double& t) override {
    if (i_ == times_.size()) return false;
    t = times_[i_++] * scale_;
    return true;
  }
  std::vector<double> times_;
  double scale_;
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
      {.name = "sine",
       .help = "Rafiki 7.2 sine-shaped rate: peak_base (requests/s; peak 1.1 x), period_s (s), "
               "noise (sd of the per-interval factor), interval_s (s, 0 = period_s / 1000)",
       .keys = {number_key("peak_base", &A::peak_base), number_key("period_s", &A::period),
                number_key("noise", &A::noise), number_key("interval_s", &A::interval)},
       .validate = validate_sine,
       .send_times = open_stream<SineTimes>,
       .peak_rate = [](const ArrivalSpec& a) { return 1.1 * a.peak_base; }},
      {.name = "trace",
       .help = "replays the times of a CSV's first column: file (path), time_scale (gap "
               "multiplier, 0.5 = twice as fast)",
       .keys = {text_key("file", &A::trace_file), number_key("time_scale", &A::time_scale)},
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

std::vector<double> generate_think_times(const ArrivalSpec& spec, uint64_t count) {
  return drain(*think_time_stream(spec, count), count);
}

}  // namespace servelab::workloads::detail
