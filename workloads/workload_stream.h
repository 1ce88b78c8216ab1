// A workload's schedule handed out request by request: the same requests, in the same order,
// as generate() (workload.h) returns, with memory that does not grow with their number (a
// trace file is read whole when the stream is made). For runs too long to hold a schedule.
// The draws run on a thread of the stream's own, a few thousand requests ahead of the
// consumer: a simulation's thread only copies them out. Not thread-safe: one consumer.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "workloads/workload.h"

namespace servelab::workloads {

namespace detail {
class TimeStream;
class ModelStream;
}  // namespace detail

// One request of a schedule.
struct ScheduledRequest {
  uint32_t model = 0;  // model index
  double time = 0;     // open loop: its send time (seconds from the start); closed: think time
};

class WorkloadStream {
 public:
  // Checks the spec as generate() does (std::invalid_argument, same messages), reads any trace
  // file, and draws the first request: an open loop that would produce none throws here.
  explicit WorkloadStream(const WorkloadSpec& spec);
  ~WorkloadStream();
  WorkloadStream(WorkloadStream&&) noexcept;
  WorkloadStream& operator=(WorkloadStream&&) noexcept;

  bool closed_loop() const { return closed_loop_; }
  uint32_t concurrency() const { return concurrency_; }  // closed loop only
  uint32_t samples_per_query() const { return samples_per_query_; }  // closed loop only
  double warmup() const { return warmup_; }

  // The next request; false once the schedule has ended. Throws, as generate() does, when a
  // schedule limited by its duration alone would pass the request cap.
  bool next(ScheduledRequest& out);
  uint64_t produced() const { return produced_; }  // requests handed out so far
  // How many requests of the whole schedule go to each model index below `models`, drawn
  // by a second stream of the same spec (this one's position is unchanged): a pass over the
  // draws, memory of `models` counters.
  std::vector<uint64_t> model_counts(size_t models) const;

 private:
  WorkloadSpec spec_;
  bool closed_loop_ = false;
  uint32_t concurrency_ = 0;
  uint32_t samples_per_query_ = 0;
  double warmup_ = 0;
  // Draws the requests in chunks, ahead of the consumer, on its own thread
  // (workload_stream.cpp); owns the time and model streams.
  struct Drawer;
  void refill();  // the next chunk; empty once the schedule has ended
  std::unique_ptr<Drawer> drawer_;
  std::vector<ScheduledRequest> chunk_;
  size_t chunk_next_ = 0;
  uint64_t produced_ = 0;
};

}  // namespace servelab::workloads
