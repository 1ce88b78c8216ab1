#include "engine/server/http_metrics.h"

#include <sstream>

namespace servelab::server {

void HttpMetrics::finished(const std::string& route, int status, double seconds) {
  in_flight_--;
  std::lock_guard<std::mutex> lock(mu_);
  auto& r = by_route_[route];
  r.by_status[status]++;
  r.count++;
  r.seconds += seconds;
}

void HttpMetrics::refused(int status) {
  in_flight_++;  // finished() counts it out
  finished("transport", status, 0);
}

std::string HttpMetrics::text() const {
  std::ostringstream out;
  std::lock_guard<std::mutex> lock(mu_);
  out << "# HELP servelab_http_requests_total HTTP requests answered, by route and status.\n"
      << "# TYPE servelab_http_requests_total counter\n";
  for (const auto& [route, s] : by_route_)
    for (const auto& [status, n] : s.by_status)
      out << "servelab_http_requests_total{route=\"" << route << "\",code=\"" << status
          << "\"} " << n << "\n";
  out << "# HELP servelab_http_request_seconds Time from request parsed to response handed "
         "to the connection.\n"
      << "# TYPE servelab_http_request_seconds summary\n";
  for (const auto& [route, s] : by_route_) {
    out << "servelab_http_request_seconds_sum{route=\"" << route << "\"} " << s.seconds << "\n"
        << "servelab_http_request_seconds_count{route=\"" << route << "\"} " << s.count << "\n";
  }
  out << "# HELP servelab_http_requests_in_flight Requests parsed and not yet answered.\n"
      << "# TYPE servelab_http_requests_in_flight gauge\n"
      << "servelab_http_requests_in_flight " << in_flight_.load() << "\n";
  out << "# HELP servelab_heap_trims_total Times freed heap memory was given back to the "
         "system: once idle (--idle-trim-ms), or after large bodies or answers were freed.\n"
      << "# TYPE servelab_heap_trims_total counter\n"
      << "servelab_heap_trims_total{reason=\"idle\"} " << idle_trims_.load() << "\n"
      << "servelab_heap_trims_total{reason=\"large_frees\"} " << large_free_trims_.load()
      << "\n";
  return out.str();
}

}  // namespace servelab::server
