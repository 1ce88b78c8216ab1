// Where a run's requests come from, in id order: a generated workload (every request known
// up front) or a workload stream (each drawn as the clients reach it, so that memory does not
// grow with the run). The clients pull from it; request i is the i-th pulled.
// Owned by simulate()'s caller; one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/workload.h"
#include "workloads/workload_stream.h"

namespace servelab::sim {

class Schedule {
 public:
  virtual ~Schedule() = default;
  virtual bool closed_loop() const = 0;
  virtual uint32_t concurrency() const = 0;  // closed loop only
  // Closed loop: requests in queries of this many, the next query when the previous one
  // answered whole (workloads::ArrivalSpec::samples_per_query); 0: each answer sends one.
  virtual uint32_t samples_per_query() const = 0;
  virtual double warmup() const = 0;
  // The next request (its target index and its send or think time); false once none is left.
  virtual bool next(workloads::ScheduledRequest& out) = 0;
  // How many requests each of `targets` targets gets in the whole schedule (placement by
  // load reads it); empty where it cannot be known up front.
  virtual std::vector<double> target_counts(size_t targets) const { return {}; }
};

// A generated workload, request by request. Throws ConfigError where its lengths differ.
class GeneratedSchedule final : public Schedule {
 public:
  explicit GeneratedSchedule(const workloads::Workload& w);
  bool closed_loop() const override { return w_.closed_loop; }
  uint32_t concurrency() const override { return w_.concurrency; }
  uint32_t samples_per_query() const override { return w_.samples_per_query; }
  double warmup() const override { return w_.warmup; }
  bool next(workloads::ScheduledRequest& out) override;
  std::vector<double> target_counts(size_t targets) const override;

 private:
  const workloads::Workload& w_;
  size_t next_ = 0;
};

class StreamedSchedule final : public Schedule {
 public:
  explicit StreamedSchedule(workloads::WorkloadStream& s) : s_(s) {}
  bool closed_loop() const override { return s_.closed_loop(); }
  uint32_t concurrency() const override { return s_.concurrency(); }
  uint32_t samples_per_query() const override { return s_.samples_per_query(); }
  double warmup() const override { return s_.warmup(); }
  bool next(workloads::ScheduledRequest& out) override { return s_.next(out); }
  // The stream's schedule drawn a second time: the generated schedule's counts.
  std::vector<double> target_counts(size_t targets) const override;

 private:
  workloads::WorkloadStream& s_;
};

}  // namespace servelab::sim
