// generate() and validate(): a WorkloadSpec becomes a schedule (models + send or think times).
#include "workloads/workload.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "workloads/access_patterns.h"
#include "workloads/arrivals.h"

namespace servelab::workloads {

void validate(const WorkloadSpec& spec) {
  if (spec.num_models == 0) throw std::invalid_argument("workload: there are no models");
  detail::validate_access(spec.access, spec.num_models);
  detail::validate_arrival(spec.arrival);
  if (!std::isfinite(spec.duration) || spec.duration < 0)
    throw std::invalid_argument("workload.duration must be a non-negative number of seconds");
  if (!std::isfinite(spec.warmup) || spec.warmup < 0)
    throw std::invalid_argument("workload.warmup must be a non-negative number of seconds");
  if (spec.requests > detail::kMaxRequests)
    throw std::invalid_argument("workload.requests must be at most " +
                                std::to_string(detail::kMaxRequests));
  const std::string& type = spec.arrival.type;
  if (type == "closed" && spec.requests == 0)
    throw std::invalid_argument("workload.requests must be at least 1 for closed-loop arrivals");
  if (type != "closed" && type != "trace" && spec.requests == 0 && spec.duration == 0)
    throw std::invalid_argument("workload: " + type +
                                " arrivals need 'requests' or 'duration' (or both)");
}

Workload generate(const WorkloadSpec& spec) {
  validate(spec);
  Workload w;
  w.warmup = spec.warmup;
  if (spec.arrival.type == "closed") {
    w.closed_loop = true;
    w.concurrency = spec.arrival.concurrency;
    w.think_times = detail::generate_think_times(spec.arrival, spec.requests);
  } else {
    w.send_times = detail::generate_send_times(spec.arrival, spec.requests, spec.duration);
    if (w.send_times.empty())
      throw std::invalid_argument("workload: the arrival process produced no requests "
                                  "(duration too short or trace empty)");
  }
  const uint64_t count = w.closed_loop ? spec.requests : w.send_times.size();
  w.models = detail::generate_models(spec.access, spec.num_models, count);
  return w;
}

}  // namespace servelab::workloads
