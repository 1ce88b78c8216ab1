#include "experiments/config_metrics.h"

#include <cstdint>
#include <stdexcept>

#include "config/engine_yaml.h"
#include "config/yaml_util.h"

namespace servelab::experiments {
namespace {

double servers_of(const YAML::Node& config) {
  const YAML::Node cluster = config["cluster"];
  if (!cluster || !cluster.IsMap() || !cluster["servers"]) return 1;
  try {
    return static_cast<double>(cluster["servers"].as<uint32_t>());
  } catch (const YAML::Exception&) {
    throw std::invalid_argument("cluster.servers: expected a whole number");
  }
}

}  // namespace

std::vector<std::string> config_metric_names() { return {"servers", "memory_bytes"}; }

std::map<std::string, double> config_metrics(const YAML::Node& config) {
  config::EngineSection engine;
  try {
    engine = config::parse_engine_section(config);
  } catch (const ConfigError& e) {
    throw std::invalid_argument(e.what());
  }
  const double servers = servers_of(config);
  std::map<std::string, double> out{{"servers", servers}};
  double per_server = 0;
  for (Tier t : {Tier::Host, Tier::Device}) {
    if (t == Tier::Device && engine.control.exec_tier != Tier::Device) break;
    const uint64_t bytes = engine.control.budgets[static_cast<size_t>(t)].bytes;
    if (bytes == UINT64_MAX) return out;  // unlimited: the config provisions no bound
    per_server += static_cast<double>(bytes);
  }
  out["memory_bytes"] = servers * per_server;
  return out;
}

}  // namespace servelab::experiments
