// The merge of runs made apart (`servelab run --task N` on a cluster's nodes, then `--merge`):
// each run's folder runs/<name> holds run.json (its row) and summary.json; the merge checks
// every folder against the run of the plan it is merged as and indexes the rows into
// results.db. Internal to the experiments' runner; not thread-safe (files of one results
// folder).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/results_index.h"
#include "experiments/runner.h"

namespace servelab::experiments {

// A run's folder name: p<point, 3 digits>-<mode>-r<repetition>.
std::string run_name(uint32_t point, const std::string& mode, uint32_t repetition);

// A task's row for the merge: DIR/run.json. Throws std::runtime_error when it cannot write.
void write_run_row(const std::filesystem::path& dir, const RunRow& row);

// One run of the plan, as the merge expects to find it.
struct PlannedFolder {
  uint32_t point = 0;
  std::string mode;
  uint32_t repetition = 0;
  uint64_t seed = 0;
};

struct MergedRun {
  RunRow row;
  nlohmann::json summary;  // summary.json where the run is ok
};

// Each planned run's row and summary from OUT/runs/<name>, read before results.db is touched:
// a run without a readable run.json is failed ("its task did not finish"), an ok run without
// a readable summary.json failed too. Throws ExperimentError, naming the folder and the
// folder of the run it holds, when a run.json records another run (point, mode, repetition
// or seed): a stale or copied folder.
std::vector<MergedRun> read_merged_runs(const std::vector<PlannedFolder>& plan,
                                        const std::filesystem::path& out);

// The rows into `index`; counts the runs and the failed ones into `outcome`.
RunOutcome index_merged_runs(const std::vector<MergedRun>& runs, ResultsIndex& index,
                             RunOutcome outcome);

}  // namespace servelab::experiments
