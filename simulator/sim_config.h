// A simulation ready to run: the typed run configuration (config/run_config.h) resolved
// against its cost profile into a SimulationSetup. `servelab simulate` and the experiment
// runner's sim mode build one; the parsing itself is config/'s. Value types; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/run_config.h"
#include "simulator/simulator.h"
#include "workloads/workload.h"

namespace servelab::sim {

struct SimConfig {
  config::RunConfig run;
  SimulationSetup setup;           // ready for simulate() with generate(workload)
  YAML::Node resolved;             // the effective config, for DIR/config.yaml
};

// Checks the names config/ leaves to the simulator: simulation.event_list (event_list.h) and
// cluster.router with its parameters (engine/route/router.h). Throws ConfigError naming the file and key.
void check_simulator_names(const config::RunConfig& run);

// Checks the simulator's names, loads the profile `run` names and resolves its models: every
// model needs an entry there. Throws ConfigError naming the file and the model.
SimulationSetup build_setup(const config::RunConfig& run);
SimConfig make_sim_config(config::RunConfig run);

// config::load_run_config / parse_run_config, then make_sim_config.
SimConfig load_sim_config(const std::string& path, const std::vector<std::string>& overrides = {},
                          std::optional<uint64_t> seed = std::nullopt);
SimConfig parse_sim_config(const YAML::Node& root, const std::string& file,
                           const std::string& base_dir, std::optional<uint64_t> seed = std::nullopt);

}  // namespace servelab::sim
