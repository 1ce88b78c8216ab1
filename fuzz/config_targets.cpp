// Fuzz entry point for run configurations: arbitrary bytes as the YAML of a config file, parsed
// the way every mode reads one (config/run_config.h). Errors are the expected outcome; any
// crash, hang or unbounded allocation is a finding.
#include <stdexcept>
#include <string>

#include <yaml-cpp/yaml.h>

#include "config/run_config.h"
#include "fuzz/targets.h"

namespace servelab::fuzz {

int run_config(const uint8_t* data, size_t size) {
  try {
    const YAML::Node root = YAML::Load(std::string(reinterpret_cast<const char*>(data), size));
    const config::RunConfig c = config::parse_run_config(root, "fuzz.yaml", "");
    (void)config::emit_run_config(c);
  } catch (const ConfigError&) {
  } catch (const YAML::Exception&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}

}  // namespace servelab::fuzz
