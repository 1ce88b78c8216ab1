// Fuzz entry points for configuration files: arbitrary bytes as the YAML of a run config,
// parsed the way every mode reads one (config/run_config.h), or of a cost profile
// (config/profile_yaml.h). Errors are the expected outcome; any crash, hang or unbounded
// allocation is a finding.
#include <stdexcept>
#include <string>

#include <yaml-cpp/yaml.h>

#include "config/profile_yaml.h"
#include "config/run_config.h"
#include "fuzz/targets.h"

namespace servelab::fuzz {

int run_config(const uint8_t* data, size_t size) {
  try {
    const YAML::Node root =
        config::load_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
    const config::RunConfig c = config::parse_run_config(root, "fuzz.yaml", "");
    (void)config::emit_run_config(c);
  } catch (const ConfigError&) {
  } catch (const YAML::Exception&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}

// A profile that parses must parse again from what it writes, with the same models (its
// numbers pass through milliseconds, so they may move by an ulp: not compared).
int profile_file(const uint8_t* data, size_t size) {
  config::ProfileFile p;
  try {
    const YAML::Node root =
        config::load_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
    p = config::parse_profile_file(root, "fuzz.yaml");
  } catch (const ConfigError&) {
    return 0;
  } catch (const YAML::Exception&) {
    return 0;
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const config::ProfileFile again =
      config::parse_profile_file(YAML::Load(YAML::Dump(config::profile_to_yaml(p))), "again.yaml");
  bool same = again.costs.models.size() == p.costs.models.size();
  for (size_t i = 0; same && i < p.costs.models.size(); ++i)
    same = again.costs.models[i].name == p.costs.models[i].name &&
           again.costs.models[i].batches.size() == p.costs.models[i].batches.size();
  if (!same) throw std::logic_error("profile_file: a parsed profile reads back other models");
  return 0;
}

}  // namespace servelab::fuzz
