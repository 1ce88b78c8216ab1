// The workloads a LoadGen scenario sends, built from the config's own workload (its models,
// access pattern and seeds kept): one for `servelab simulate --scenario` and `servelab load
// --scenario` alike, so both bodies run the same queries.
#pragma once

#include <cstdint>

#include "capacity/scenario.h"
#include "workloads/workload.h"

namespace servelab::cli {

// Server: Poisson arrivals at `rate` (requests/s) for as long as the scenario's minimum
// query count and duration need (capacity::schedule_seconds).
workloads::WorkloadSpec poisson_at(workloads::WorkloadSpec w, const capacity::ScenarioSettings& s,
                                   double rate);

// Single-stream (one in flight), multi-stream (one query of samples_per_query in flight) or
// offline (every sample at once, in order) with `n` queries.
workloads::WorkloadSpec counted(workloads::WorkloadSpec w, const capacity::ScenarioSettings& s,
                                uint64_t n);

}  // namespace servelab::cli
