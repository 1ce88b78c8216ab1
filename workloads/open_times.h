// The base of every open-loop arrival stream (private to servelab_workloads): send times that
// end at a duration or a count, and the arrival section's error and number checks shared by
// the processes' files (arrivals.cpp, bursty_arrivals.cpp). Not thread-safe: one per schedule.
#pragma once

#include <cmath>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

#include "workloads/streams.h"
#include "workloads/workload.h"

namespace servelab::workloads::detail {

inline constexpr uint64_t kMaxRequests = 100'000'000;  // see arrivals.h

[[noreturn]] inline void arrival_error(const std::string& what) {
  throw std::invalid_argument("workload.arrival: " + what);
}

inline std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

inline void require_positive(double v, const char* name, const std::string& type) {
  if (!std::isfinite(v) || v <= 0)
    arrival_error(std::string(name) + " must be a positive number for " + type + ", got " +
                  number_text(v));
}

// A rate whose gaps the clock resolves: kMinRate..kMaxRate requests/s.
inline void require_rate(double v, const char* name, const std::string& type) {
  require_positive(v, name, type);
  if (v < kMinRate || v > kMaxRate)
    arrival_error(std::string(name) + " must be in " + number_text(kMinRate) + ".." +
                  number_text(kMaxRate) + " requests/s for " + type + ", got " +
                  number_text(v) + " (a run's times resolve 1 us up to " +
                  number_text(kMaxRunSeconds) + " s)");
}

// Seconds within a run's clock: 0..kMaxRunSeconds.
inline void require_seconds(double v, const char* name) {
  if (!std::isfinite(v) || v < 0 || v > kMaxRunSeconds)
    arrival_error(std::string(name) + " must be in 0.." + number_text(kMaxRunSeconds) +
                  " s (a run's times resolve 1 us up to there), got " + number_text(v));
}

// An open loop's times end at `duration` (0: never) or at the count limit (max_requests,
// kMaxRequests where it is 0).
class OpenTimes : public TimeStream {
 public:
  OpenTimes(uint64_t max_requests, double duration)
      : limit_(max_requests ? max_requests : kMaxRequests), duration_(duration) {}
  bool next(double& t) final {
    if (ended_ || !limit_.room()) return false;
    if (!draw(t) || (duration_ > 0 && t >= duration_)) {
      ended_ = true;
      return false;
    }
    if (!(t <= kMaxRunSeconds))
      arrival_error("a send time passes " + number_text(kMaxRunSeconds) +
                    " s, where a run's times no longer resolve 1 us (lower time_scale or the "
                    "gaps)");
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

}  // namespace servelab::workloads::detail
