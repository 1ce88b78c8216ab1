// Small helpers for reading YAML configs with user-facing errors: every error names the file,
// the line and the dotted key (`engine.tiers.device.megabytes`). Thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "engine/control/policy_params.h"

namespace servelab::config {

// Megabytes in configs and profiles (model sizes, tier budgets) are 10^6 bytes.
constexpr double kMB = 1e6;

// Where a node came from, for messages: the file (may be empty) plus the dotted key path.
struct Where {
  std::string file;
  std::string path;
  Where child(const std::string& key) const {
    return {file, path.empty() ? key : path + "." + key};
  }
};

// Throws ConfigError "FILE:LINE: PATH: MSG".
[[noreturn]] void fail(const Where& w, const YAML::Node& node, const std::string& msg);

// Throws unless `node` is a mapping (a null node counts as an empty mapping).
void require_map(const YAML::Node& node, const Where& w);
// Throws naming the first key of `node` not in `known`, and listing the known keys.
void check_keys(const YAML::Node& node, const Where& w, const std::vector<std::string>& known);

// Scalar conversions; throw ConfigError naming the key when the value is malformed.
double as_double(const YAML::Node& node, const Where& w);
uint64_t as_uint(const YAML::Node& node, const Where& w);
bool as_bool(const YAML::Node& node, const Where& w);
std::string as_string(const YAML::Node& node, const Where& w);
// A model name: a scalar that passes model_name_problem (common/model_name.h). The message
// gives the rule, not the name, which may hold control bytes.
std::string as_model_name(const YAML::Node& node, const Where& w);
// A scalar as written, or a sequence of scalars joined by commas (for PolicyParams).
std::string as_param_string(const YAML::Node& node, const Where& w);

// A file's whole text; throws ConfigError naming the file when it cannot be read.
std::string read_text(const std::string& path);
// Loads a YAML file; throws ConfigError naming the file on a missing file, a syntax error, a
// key written twice or a document beyond the limits of config/yaml_limits.h.
YAML::Node load_file(const std::string& path);
// The same for YAML text; `name` stands for the file in messages.
YAML::Node load_text(const std::string& text, const std::string& name);

// Sets `dotted.key=value` in `root`, creating mappings on the way; the value is parsed as
// YAML (so `3`, `true`, `[1, 2]` keep their types). Throws ConfigError on a malformed item.
void apply_override(YAML::Node& root, const std::string& assignment);

// Deep merge: mappings merge key by key; anything else in `over` replaces what is in `target`.
void merge_into(YAML::Node target, const YAML::Node& over);

}  // namespace servelab::config
