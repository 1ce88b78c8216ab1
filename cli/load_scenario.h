// `servelab load --scenario NAME`: MLPerf LoadGen's scenarios (capacity/scenario.h) sent to a
// running server over HTTP by the load generator; the workload file gives the access pattern
// and seeds, the scenario the arrivals. The reported run's records (the Server scenario's
// highest valid rate) are written as any load run's, with loadgen_summary.txt beside them.
#pragma once

#include <iosfwd>
#include <string>

#include "capacity/scenario.h"
#include "results/records.h"
#include "workloads/loadgen/loadgen.h"
#include "workloads/workload.h"

namespace servelab::cli {

struct LoadScenarioRun {
  workloads::WorkloadSpec spec;      // the reported run's workload
  results::RunRecords records;       // its records
  loadgen::LoadStats stats;
  std::string loadgen_summary;       // loadgen_summary.txt's text
  bool valid = false;
};

// Runs the scenario's trials against options.url, one line per trial to `progress` (may be
// null). Throws std::invalid_argument on bad settings.
LoadScenarioRun run_load_scenario(const loadgen::LoadOptions& options,
                                  const workloads::WorkloadSpec& base,
                                  const capacity::ScenarioSettings& s, std::ostream* progress);

}  // namespace servelab::cli
