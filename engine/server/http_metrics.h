// HTTP-level counters for GET /metrics: requests by route and status, latency sums, requests
// in flight. Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace servelab::server {

class HttpMetrics {
 public:
  void started() { in_flight_++; }
  // One answered request: its route pattern, status and time from parse to reply.
  void finished(const std::string& route, int status, double seconds);
  // One answer the HTTP transport gave itself before any route saw the request (413, 431,
  // 414, 400, 501): counted under the route "transport".
  void refused(int status);
  // The process gave freed heap memory back (engine/server/heap_trim.h): after being idle, or
  // after large buffers were freed.
  void heap_trimmed(bool idle) { (idle ? idle_trims_ : large_free_trims_)++; }
  // Prometheus text exposition of the counters.
  std::string text() const;

 private:
  struct RouteStats {
    uint64_t count = 0;
    double seconds = 0;
    std::map<int, uint64_t> by_status;  // answers by HTTP status
  };
  mutable std::mutex mu_;
  // By route, then status: counting a route seen before copies no string.
  std::map<std::string, RouteStats> by_route_;
  std::atomic<int64_t> in_flight_{0};
  std::atomic<uint64_t> idle_trims_{0}, large_free_trims_{0};
};

}  // namespace servelab::server
