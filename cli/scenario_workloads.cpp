#include "cli/scenario_workloads.h"

#include "workloads/open_times.h"

namespace servelab::cli {

workloads::WorkloadSpec poisson_at(workloads::WorkloadSpec w, const capacity::ScenarioSettings& s,
                                   double rate) {
  w.arrival.type = "poisson";
  w.arrival.rate = rate;
  w.requests = 0;
  w.duration = capacity::schedule_seconds(s, rate);
  w.warmup = 0;
  return w;
}

workloads::WorkloadSpec counted(workloads::WorkloadSpec w, const capacity::ScenarioSettings& s,
                                uint64_t n) {
  if (s.scenario == capacity::Scenario::kSingleStream ||
      s.scenario == capacity::Scenario::kMultiStream) {
    const bool multi = s.scenario == capacity::Scenario::kMultiStream;
    w.arrival.type = "closed";
    w.arrival.concurrency = multi ? s.samples_per_query : 1;
    w.arrival.samples_per_query = multi ? s.samples_per_query : 0;
    w.arrival.think_time = 0;
    n *= multi ? s.samples_per_query : 1;  // n queries of that many samples
  } else {
    w.arrival.type = "constant";
    w.arrival.rate = workloads::kMaxRate;  // 1 ns apart: at once, in order
  }
  w.requests = n;
  w.duration = 0;
  w.warmup = 0;
  return w;
}

}  // namespace servelab::cli
