// `groups:` of a run configuration: model groups (ensembles) and their accuracy tables
// (schema in docs/config.md). A mapping from group name to {members, accuracy_table, subset},
// so that an override or a sweep reaches one group's key: `groups.NAME.subset`. Internal to config/ (run_config.cpp); thread-compatible.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/run_config.h"
#include "config/yaml_util.h"

namespace servelab::config {

// Absent section: no groups. Checks each group against `models` (members known, unique, no
// name shared with a model or another group), its subset policy against the registry, and
// reads its accuracy table (relative paths against `base_dir`). Throws ConfigError naming the
// file, the line and the key. Groups keep the mapping's order (the workload's indices).
std::vector<GroupEntry> parse_groups_section(const YAML::Node& n, const Where& w,
                                             const std::vector<ModelEntry>& models,
                                             const std::string& base_dir);

// The accuracy table of `members` from a JSON file: {"ensembles": [{"members": [names...],
// "accuracy": x}, ...]} (scripts/digits_models.py writes models/digits-ensembles.json) must
// list every non-empty subset of `members` with an accuracy in 0..1; entries naming other
// models are ignored. Throws ConfigError naming `path` and what is missing or malformed.
EnsembleAccuracy read_accuracy_table(const std::string& path,
                                     const std::vector<std::string>& members);

// Null when there are no groups (a run without groups writes the config it always wrote).
YAML::Node emit_groups_section(const std::vector<GroupEntry>& groups);

}  // namespace servelab::config
