// The simulator's sections of a run configuration: `simulation:` and `cluster:` (schema in
// docs/config.md). Internal to config/ (run_config.cpp); thread-compatible.
#pragma once

#include <yaml-cpp/yaml.h>

#include "config/run_config.h"
#include "config/yaml_util.h"

namespace servelab::config {

// Absent section: the defaults. Throws ConfigError naming the key on a bad value.
SimulationSection parse_simulation_section(const YAML::Node& n, const Where& w);
ClusterSection parse_cluster_section(const YAML::Node& n, const Where& w);

YAML::Node emit_simulation_section(const SimulationSection& s);
YAML::Node emit_cluster_section(const ClusterSection& c);

}  // namespace servelab::config
