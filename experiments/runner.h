// The experiment runner behind `servelab run`: expands the sweep, runs every point in every
// requested mode and repetition through a Backend (in rounds: run_order), and writes the
// results folder:
//   OUT/experiment.yaml              the experiment as given (read by reports/)
//   OUT/results.db                   SQLite index (experiments/results_index.h)
//   OUT/runs/p<point>-<mode>-r<rep>/ config.yaml (resolved), requests.csv, summary.json
// Not thread-safe; one call runs one experiment.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "experiments/experiment.h"
#include "results/records.h"
#include "simulator/simulator.h"

namespace servelab::experiments {

// How fast the machine ran during a real run against a body's costs (Backend::match_speed).
struct SpeedMatch {
  double factor = std::numeric_limits<double>::quiet_NaN();  // NaN: cannot say
  // The speed's course over the run relative to `factor` (simulation.speed_trace; empty when
  // the run was too short to tell).
  std::vector<sim::SimulationSetup::SpeedWindow> trace;
  // Pass-to-pass spread around that course (simulation.jitter; NaN when unknown).
  double jitter = std::numeric_limits<double>::quiet_NaN();
};

// One body (simulator or engine) that turns a resolved config into request records.
class Backend {
 public:
  virtual ~Backend() = default;
  // Runs one config with one seed (every seed of the run derives from it: simulation.seed,
  // workload access seed = seed, arrival seed = seed + 1). `run_dir` holds config.yaml,
  // which the backend may overwrite with the effective config. Throws std::exception with a
  // user-facing message when the run cannot be done; the runner records it as failed.
  virtual results::RunRecords run(const YAML::Node& config, uint64_t seed,
                                  const std::string& run_dir) = 0;
  // Called once before the first run with every config it will get (e.g. to measure a
  // missing profile up front rather than inside a timed run).
  virtual void prepare(const std::vector<YAML::Node>& configs) {}
  // Rough cost of a config in progress units (e.g. its request count), for the ETA.
  virtual double weight(const YAML::Node& config) const;
  // How much slower (> 1) or faster (< 1) than this body's costs for `config` the machine ran
  // during `real`, a real run of the same config: over the batches whose compute time the
  // records carry, the sum of measured compute times divided by the sum of this body's mean
  // latencies for the same batch sizes; and the same over windows of the run (the trace).
  // Factor NaN when it cannot say (no timed batches, a body without costs).
  virtual SpeedMatch match_speed(const YAML::Node& config, uint64_t seed,
                                 const results::RunRecords& real) const;
  // A calibration probe just before a real run (RunOptions::calibrate_each): writes to `path`
  // the profile the matching sim run uses, its batch costs from this probe and the ones
  // before it (calibration/calibration.h). Real mode with LibTorch only; the default throws.
  virtual void calibrate(const YAML::Node& config, const std::string& path);
};

struct RunOptions {
  std::vector<std::string> modes;     // empty: the experiment's own `modes`
  std::string out_dir;                // empty: results/<name>-<timestamp>
  bool fail_fast = false;             // stop at the first failed run
  bool quiet = false;                 // no progress bar
  // Both modes: run each point's real run first, then its sim run on the profile scaled by
  // the real run's speed factor and its course over the run (Backend::match_speed;
  // simulation.cost_scale and speed_trace). The sim run's summary.json gets "cost_scale",
  // "speed_windows" (the trace's length) and "unscaled" (the summary at constant speed 1).
  bool match_speed = false;
  // Both modes: before each real run, a calibration probe (Backend::calibrate) re-measures the
  // point's models' batch costs, and the sim run of the same point and repetition predicts on
  // the profile it writes (summary.json: "calibrated_profile"). Nothing is taken from the runs
  // predicted.
  bool calibrate_each = false;
  // Only these points (indices into expand_sweep's grid), e.g. a search's sample; empty: all.
  std::vector<uint32_t> points;
  // A cluster's share of the work (`servelab run --slurm`): run only the plan's task-th run
  // (0-based, in run order), writing its folder and runs/<name>/run.json but no results.db,
  // so that tasks on many nodes never write one file...
  std::optional<size_t> task;
  // ... and then, run nothing: index every planned run's folder (run.json, summary.json) into
  // results.db; a run without run.json counts as failed ("its task did not finish").
  bool merge = false;
};

// The folder names (p<point>-<mode>-r<rep>) of the runs `options` plans, in task order.
std::vector<std::string> planned_run_names(const ExperimentSpec& spec, const RunOptions& options);

struct RunOutcome {
  std::string out_dir;
  size_t runs = 0, failed = 0;
  std::string first_error;
};

// One run of the plan: a point (SweepPoint::index), a repetition, a mode.
struct PlannedRun {
  uint32_t point = 0, repetition = 0;
  std::string mode;
  bool operator==(const PlannedRun&) const = default;
};

// The order runs take, in rounds: every point's first repetition in point order, then every
// second one, and so on (a point with fewer repetitions drops out of the later rounds); within
// a repetition, `modes` in the order given. A point's repetitions are thus spread over the
// whole experiment: on a shared machine whose speed holds for seconds to minutes, they sample
// different moments instead of one, and a point's mean is a mean over the machine's states.
std::vector<PlannedRun> run_order(const ExperimentSpec& spec, const std::vector<SweepPoint>& points,
                                  const std::vector<std::string>& modes);

// Runs `spec` with one backend per mode (keys "sim", "real"). Throws ExperimentError for an
// unusable experiment (unknown mode, no backend) before any run starts.
RunOutcome run_experiment(const ExperimentSpec& spec, const RunOptions& options,
                          const std::map<std::string, Backend*>& backends);

// The number of requests in a config's workload (workload.requests; default 1000).
double config_requests(const YAML::Node& config);

}  // namespace servelab::experiments
