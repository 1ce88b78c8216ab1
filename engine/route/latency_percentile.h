// A model's latency percentile as the router sees it so far: the delay of a percentile backup
// (cluster.backup_percentile; DLIS sends a backup at the model's 95th percentile, "The Tail at
// Scale" at the 50th or 95th). It keeps the latencies of the model's last `window` answered
// requests, sorted, so that adding one costs a binary search and a move of at most `window`
// values and reading the percentile costs nothing more. The percentile interpolates linearly
// between the closest ranks (numpy's default, as results::percentile). No clock, no I/O:
// deterministic in the order its latencies are added. A value type; one thread.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace servelab::route {

class LatencyPercentile {
 public:
  // p in (0, 100]; window >= 1 latencies kept.
  LatencyPercentile(double p, size_t window) : p_(p), window_(window) {}

  // An answered request of the model took `latency` seconds (send to answer).
  void add(double latency) {
    if (order_.size() == window_) {  // the oldest leaves the window
      const double old = order_[next_];
      sorted_.erase(std::lower_bound(sorted_.begin(), sorted_.end(), old));
      order_[next_] = latency;
      next_ = (next_ + 1) % window_;
    } else {
      order_.push_back(latency);
    }
    sorted_.insert(std::upper_bound(sorted_.begin(), sorted_.end(), latency), latency);
  }

  // The percentile of the latencies in the window; NaN before any was added.
  double value() const {
    if (sorted_.empty()) return std::numeric_limits<double>::quiet_NaN();
    const double rank = p_ / 100 * double(sorted_.size() - 1);
    const size_t lo = size_t(std::floor(rank));
    const size_t hi = std::min(lo + 1, sorted_.size() - 1);
    return sorted_[lo] + (sorted_[hi] - sorted_[lo]) * (rank - double(lo));
  }

  size_t size() const { return sorted_.size(); }

 private:
  double p_;
  size_t window_;
  std::vector<double> sorted_;  // the window's latencies in increasing order
  std::vector<double> order_;   // the same in the order they came (a ring once full)
  size_t next_ = 0;             // the oldest in order_ once it is full
};

}  // namespace servelab::route
