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
  refill();
  if (chunk_size_ == 0 && !closed_loop_)
    throw std::invalid_argument("workload: the arrival process produced no requests "
                                "(duration too short or trace empty)");
}

void WorkloadStream::refill() {
  chunk_size_ = chunk_next_ = 0;
  while (!times_ended_ && chunk_size_ < kChunk) {
    ScheduledRequest& r = chunk_[chunk_size_];
    if (!times_->next(r.time)) {
      times_ended_ = true;
      break;
    }
    r.model = models_->next();
    ++chunk_size_;
  }
}

WorkloadStream::~WorkloadStream() = default;
WorkloadStream::WorkloadStream(WorkloadStream&&) noexcept = default;
WorkloadStream& WorkloadStream::operator=(WorkloadStream&&) noexcept = default;

bool WorkloadStream::next(ScheduledRequest& out) {
  if (chunk_next_ == chunk_size_) refill();
  if (chunk_next_ == chunk_size_) {
    if (!closed_loop_) detail::fail_if_capped(spec_.arrival, spec_.requests, produced_);
    return false;
  }
  out = chunk_[chunk_next_++];
  ++produced_;
  return true;
}

}  // namespace servelab::workloads
