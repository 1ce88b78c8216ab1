// Schedules generated one request at a time (private to servelab_workloads). Every arrival
// process and access pattern is a stream; the values it gives, in order, are the schedule:
// generate() collects them into vectors, WorkloadStream (workload_stream.h) hands them out
// as a simulation needs them. Each stream owns its random generator, seeded from its spec.
// Not thread-safe: one stream per schedule.
#pragma once

#include <cstdint>

namespace servelab::workloads::detail {

// Send times (open loop) or think times (closed loop), in request order.
class TimeStream {
 public:
  virtual ~TimeStream() = default;
  // The next time; false once the schedule has ended (and on every call after that).
  virtual bool next(double& t) = 0;
};

// The model index of each request, in request order; never ends.
class ModelStream {
 public:
  virtual ~ModelStream() = default;
  virtual uint32_t next() = 0;
};

// A schedule's count limit: `max_requests`, or kMaxRequests (arrivals.h) where that is 0.
class CountLimit {
 public:
  explicit CountLimit(uint64_t limit) : left_(limit) {}
  bool room() const { return left_ > 0; }
  void take() { --left_; }

 private:
  uint64_t left_;
};

}  // namespace servelab::workloads::detail
