// Simulation configs: the YAML file `servelab simulate` runs (schema in docs/config.md).
// Resolves models against the cost profile, parses the engine, policies and workload
// sections, and records the effective settings (every default filled in) for config.yaml.
// Value types; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/engine_yaml.h"
#include "simulator/simulator.h"
#include "workloads/workload.h"

namespace servelab::sim {

struct SimConfig {
  std::string name;                  // run name (defaults to the file's stem)
  std::string file;                  // the config file read ("" when parsed from a node)
  std::string profile_path;          // resolved against the config file's folder
  std::vector<std::string> profile_models;  // per model: the profile entry it uses
  config::EngineSection engine;
  workloads::WorkloadSpec workload;
  SimulationSetup setup;             // ready for simulate() with generate(workload)
  YAML::Node resolved;               // the effective config, for DIR/config.yaml
};

// Reads `path`, applies `overrides` ("dotted.key=value", in order) to the YAML before
// parsing, then `seed` if given (simulation.seed = N, workload access seed = N, arrival
// seed = N + 1). Throws ConfigError with a message naming the file and key.
SimConfig load_sim_config(const std::string& path, const std::vector<std::string>& overrides = {},
                          std::optional<uint64_t> seed = std::nullopt);
// Same from a parsed node; relative paths (profile, traces) resolve against `base_dir`.
SimConfig parse_sim_config(const YAML::Node& root, const std::string& file,
                           const std::string& base_dir, std::optional<uint64_t> seed = std::nullopt);

// simulation.speed_trace as written in a config: a list of flow-style [from_s, factor] pairs
// (a null node for an empty trace).
YAML::Node speed_trace_yaml(const std::vector<SimulationSetup::SpeedWindow>& trace);

}  // namespace servelab::sim
