// `servelab simulate CONFIG --scenario NAME`: MLPerf LoadGen's scenarios (capacity/scenario.h)
// run in the simulator on the config's models, profile and policies; the config's workload
// section gives the access pattern and seeds, the scenario the arrivals. The reported run is
// then written as a plain run (requests.csv, summary.json) with loadgen_summary.txt beside it.
#pragma once

#include <iosfwd>
#include <string>

#include "cli/scenario_options.h"

#include "capacity/scenario.h"
#include "simulator/sim_config.h"
#include "workloads/workload.h"

namespace servelab::cli {

struct SimScenarioRun {
  workloads::WorkloadSpec workload;  // the reported run's workload, to run again and write
  std::string loadgen_summary;       // loadgen_summary.txt's text
  bool valid = false;
};

// Runs the scenario's trials (the Server scenario's search; a run long enough for both
// minimums otherwise), printing one line per trial to `progress` (may be null). Throws
// std::invalid_argument on bad settings.
SimScenarioRun run_sim_scenario(const sim::SimConfig& cfg, const capacity::ScenarioSettings& s,
                                std::ostream* progress);

}  // namespace servelab::cli
