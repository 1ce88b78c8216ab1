#include "workloads/workload_stream.h"

#include <stdexcept>

#include "workloads/access_patterns.h"
#include "workloads/arrivals.h"

namespace servelab::workloads {

WorkloadStream::WorkloadStream(const WorkloadSpec& spec)
    : spec_(spec), warmup_(spec.warmup) {
  validate(spec);
  closed_loop_ = detail::arrival_process(spec.arrival.type).closed_loop();
  if (closed_loop_) {
    concurrency_ = spec.arrival.concurrency;
    times_ = detail::think_time_stream(spec.arrival, spec.requests);
  } else {
    times_ = detail::send_time_stream(spec.arrival, spec.requests, spec.duration);
  }
  models_ = detail::model_stream(spec.access, spec.num_models);
  has_first_ = times_->next(first_);
  if (!has_first_ && !closed_loop_)
    throw std::invalid_argument("workload: the arrival process produced no requests "
                                "(duration too short or trace empty)");
}

WorkloadStream::~WorkloadStream() = default;
WorkloadStream::WorkloadStream(WorkloadStream&&) noexcept = default;
WorkloadStream& WorkloadStream::operator=(WorkloadStream&&) noexcept = default;

bool WorkloadStream::next(ScheduledRequest& out) {
  if (has_first_) {
    has_first_ = false;
    out.time = first_;
  } else if (!times_->next(out.time)) {
    if (!closed_loop_) detail::fail_if_capped(spec_.arrival, spec_.requests, produced_);
    return false;
  }
  out.model = models_->next();
  ++produced_;
  return true;
}

}  // namespace servelab::workloads
