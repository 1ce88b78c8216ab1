// An experiment: a ServeLab config (the same schema `servelab simulate` reads, docs/config.md)
// plus experiment keys that say what to sweep, how often, in which mode, and what the paper
// claims. Value types; not thread-safe (yaml-cpp nodes share storage: clone before mutating).
//
//   name: rafiqi-concurrency           # experiment keys ...
//   claim: "..."                       # the paper's claim, quoted on the report
//   scaled_down: "..."                 # how it differs from the paper's setting
//   modes: [sim, real]                 # default for `servelab run` (override: --mode)
//   repetitions: 2                     # runs per point and mode
//   seeds: [1, 2]                      # seed of repetition r (default 1..repetitions)
//   more_repetitions:                  # points that need more runs (their value is a mean
//     - where: {workload.arrival.concurrency: [16, 32]}   # over noisier runs), matched by
//       repetitions: 10                # sweep values (a value or a list per axis path)
//   skip:                              # grid points not to run, matched the same way
//     - {cluster.backup_after_s: 0, cluster.backup_percentile: [50, 95]}
//   seed_paths: [engine.x.seed]        # extra paths set to the seed (the backend already
//                                      # seeds simulation, access and arrival from it)
//   sweep: {workload.arrival.concurrency: [1, 2, 4], policies.batching.name: [none]}
//   figures: [...]                     # read by reports/ only
//   sim: {...}                         # merged into the config in sim mode only
//   real: {...}                        # merged into the config in real mode only
//   models: ... engine: ... workload: ...   # ... everything else is the config
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace servelab::experiments {

// A broken experiment file; the message names the file and key and is shown to the user.
struct ExperimentError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Limits that keep a small file from asking for more runs than memory holds: repetitions of a
// point (repetitions, more_repetitions, seeds), and the runs of the whole experiment (its grid
// points times the most repetitions of a point times its modes). Checked before anything is
// expanded.
inline constexpr uint32_t kMaxRepetitions = 10'000;
inline constexpr uint64_t kMaxRuns = 100'000;

struct SweepAxis {
  std::string path;                // dotted path into the config, e.g. workload.access.type
  std::vector<YAML::Node> values;  // scalars (or small mappings) to set at `path`
};

// Sweep points by their values: for each axis path, one of the values.
using PointMatch = std::vector<std::pair<std::string, std::vector<YAML::Node>>>;

// Points whose sweep values match `where` run `repetitions` times.
struct RepetitionRule {
  PointMatch where;
  uint32_t repetitions = 1;
};

struct ExperimentSpec {
  std::string file;                // where it was read from
  std::string name;
  YAML::Node doc;                  // the whole file
  YAML::Node base;                 // the config: doc minus experiment keys
  YAML::Node sim_overrides, real_overrides;
  std::vector<std::string> modes{"sim"};
  std::vector<SweepAxis> sweep;    // grid, first axis outermost
  uint32_t repetitions = 1;
  std::vector<uint64_t> seeds;     // one per repetition (of the point with the most)
  std::vector<RepetitionRule> more_repetitions;
  std::vector<PointMatch> skip;    // grid points left out (a combination that is no config)
  std::vector<std::string> seed_paths;
};

// One grid point: a value per axis (in axis order) and a short label ("concurrency=4 none").
struct SweepPoint {
  uint32_t index = 0;
  std::vector<std::pair<std::string, YAML::Node>> values;
  std::string label;
};

// Reads and checks an experiment file. Throws ExperimentError.
ExperimentSpec load_experiment(const std::string& file);
ExperimentSpec parse_experiment(const YAML::Node& doc, const std::string& file);

// Applies "dotted.path=VALUE" (VALUE is YAML) to the experiment: a path that is a sweep axis
// with a list VALUE replaces the axis values; a list VALUE at a path where the config holds one
// value (engine.max_batch=[8,32,128]), or leaves the path out and its default is one value
// (cluster.servers=[1,2,4]: config::default_config_tree), adds a sweep axis, innermost; `repetitions` (then for
// every point) and `seeds` change the experiment's own keys; anything else changes the base
// config. The sweep's run count is checked again.
// Throws ExperimentError on a malformed assignment.
void apply_set(ExperimentSpec& spec, const std::string& assignment);

// The grid (cartesian product of the axes) less the points `skip` matches, numbered in order;
// one point with no values when no sweep.
// Throws ExperimentError, before expanding, when the experiment has more than kMaxRuns runs.
std::vector<SweepPoint> expand_sweep(const ExperimentSpec& spec);
// Throws ExperimentError naming `sweep` and kMaxRuns when the experiment has more runs.
void check_run_count(const ExperimentSpec& spec);

// How often `point` runs: `repetitions`, or more where a rule of `more_repetitions` matches it.
uint32_t repetitions_at(const ExperimentSpec& spec, const SweepPoint& point);

// The config of one run: base, then the mode's overrides (deep merge), then the point's
// values, then `seed` at every seed path. A fresh tree (shares nothing with `spec`).
YAML::Node resolve_config(const ExperimentSpec& spec, const SweepPoint& point,
                          const std::string& mode, uint64_t seed);

// The node at a dotted path, or an undefined node.
YAML::Node get_path(const YAML::Node& root, const std::string& dotted);
// A scalar as text for labels and SQLite; non-scalars as flow YAML.
std::string node_text(const YAML::Node& n);

}  // namespace servelab::experiments
