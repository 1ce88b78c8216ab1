// Reading cost profiles from YAML (schema in docs/config.md, "Profile files").
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "engine/control/cost_profile.h"

namespace servelab::config {

// Reads a profile file. Throws ConfigError naming the file, line and key on any problem
// (unreadable file, unknown key, bad number, unsorted batch sizes).
CostProfile load_profile(const std::string& path);
// Same, from an already parsed node; `file` is used in messages only.
CostProfile parse_profile(const YAML::Node& root, const std::string& file);
// The inverse of parse_profile, for writing a measured profile (`servelab profile`).
YAML::Node profile_to_yaml(const CostProfile& profile);

}  // namespace servelab::config
