// The typed run configuration: one parser, one list of keys, one set of bounds and errors for
// every mode. `servelab simulate`, the experiment runner (sim and real modes) and `serve
// --config` consume these structs; none parses another mode's section. Schema and defaults:
// docs/config.md. Value types; thread-compatible.
//
//   name, models, profile               what runs, and whose costs (ModelEntry, profile path)
//   groups                              model groups (ensembles): GroupEntry (groups_yaml.h)
//   accuracy_table                      the models' measured accuracies (runs without groups)
//   engine, policies                    EngineSection (engine_yaml.h)
//   workload                            workloads::WorkloadSpec (workloads/workload.h)
//   simulation, cluster                 SimulationSection, ClusterSection (sections.h)
//   engine_warm_up                      WarmUpSection (real engine only)
//   title, claim, sweep, ...            experiment keys (experiment_keys()), read by `run`
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/engine_yaml.h"
#include "config/sections.h"
#include "config/yaml_util.h"
#include "engine/control/cost_profile.h"
#include "engine/control/ensemble.h"
#include "workloads/workload.h"

namespace servelab::config {

// The top-level keys of a run configuration, and the experiment keys an experiment file adds
// (experiments/experiment.h). A config file may carry both: each mode reads its own.
const std::vector<std::string>& run_config_keys();
const std::vector<std::string>& experiment_keys();
bool is_experiment_key(const std::string& key);

// One entry of `models:`.
struct ModelEntry {
  std::string name;
  std::string profile_model;  // the cost-profile entry (a model file in real mode)
  uint32_t contexts = 0;      // 0: engine.contexts
  uint32_t max_batch = 0;     // 0: engine.max_batch
  // slo_ms: its requests' latency objective; none: engine.slo_ms.
  std::optional<Time> slo = std::nullopt;
};

// `models:` alone (for `servelab load`, which needs only the names): a list of names or of
// entries, or {count, prefix, profile_model}. Throws ConfigError naming `w`.
std::vector<ModelEntry> parse_models_section(const YAML::Node& n, const Where& w);

// One group of `groups:` (NAME: {members, accuracy_table, subset | dispatch}): a model group (an ensemble, Rafiki section 5). The workload addresses
// group g like a model, as index models.size() + g. Simulator only for now.
struct GroupEntry {
  std::string name;
  std::vector<std::string> members;  // model names of `models:`, in member order
  std::string accuracy_table;        // JSON file (docs/config.md), resolved against the config
  PolicySpec subset{"all", {}};      // a subset policy (engine/control/ensemble.h)
  PolicySpec dispatch{"", {}};       // an ensemble dispatcher (ensemble_dispatch.h); "": none
  EnsembleAccuracy accuracy;         // read from accuracy_table: every subset of the members
};

// `engine_warm_up:` requests the real engine answers before each measured run, not recorded
// (unlike workload.warmup, which is part of the run): a fresh server's first requests pay one-time costs the profile (measured warm) does not have. Only
// models resident in the executing tier get them, in model order; then a pause of
// max(min_pause_s, pause_quanta quanta) lets rate estimates forget them. The simulator starts
// warm and ignores the section.
struct WarmUpSection {
  uint32_t clients = 4;
  uint32_t requests_per_model = 8;  // 0: no warm-up
  double pause_quanta = 50;
  double min_pause_s = 0.1;
};

struct RunConfig {
  std::string name;     // defaults to the file's stem
  std::string file;     // "" when parsed from a node
  std::vector<ModelEntry> models;
  std::vector<GroupEntry> groups;  // after the models in the workload's indices
  // `accuracy_table:` (optional, an accuracy table file as groups use): each model's own
  // accuracy, which the simulator records for its answered requests; "" without one.
  std::string accuracy_table;
  std::map<std::string, double> model_accuracy;  // read from it: every model of `models`
  std::string profile;  // the cost profile file, resolved against the config's folder
  EngineSection engine;
  workloads::WorkloadSpec workload;
  SimulationSection simulation;
  ClusterSection cluster;
  WarmUpSection warm_up;

  // A model's context pool and batch cap with the engine defaults filled in.
  uint32_t contexts_of(const ModelEntry& m) const;
  uint32_t max_batch_of(const ModelEntry& m) const;
  // A model's measured accuracy from the first group table that lists it alone, else from
  // accuracy_table; NaN if none.
  double accuracy_of(const std::string& model) const;
};

// Parses a whole run configuration. Relative paths (profile, traces) resolve against
// `base_dir`; `seed` (when given) sets simulation.seed = N, the access seed N and the arrival
// seed N + 1. Throws ConfigError naming the file, the line and the key.
RunConfig parse_run_config(const YAML::Node& root, const std::string& file,
                           const std::string& base_dir, std::optional<uint64_t> seed = std::nullopt);

// Reads `path`, merges its `sim:` section (the experiment's sim-mode overrides) when
// `merge_sim` is set, applies `overrides` ("dotted.key=value", in order), then parses.
RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides = {},
                          std::optional<uint64_t> seed = std::nullopt, bool merge_sim = true);

// The effective configuration with every default written out (DIR/config.yaml);
// parse_run_config of the result gives back the same values.
YAML::Node emit_run_config(const RunConfig& c);
// The sections that have defaults (engine, policies, workload, simulation, cluster,
// engine_warm_up) with every default written out, as an absent key reads: where a config
// leaves a path out, this tree says whether one value or a list belongs there.
YAML::Node default_config_tree();

// simulation.speed_trace as written: a list of flow-style [from_s, factor] pairs (null when
// empty).
YAML::Node speed_trace_yaml(const std::vector<SpeedWindow>& trace);

}  // namespace servelab::config
