// Metrics a configuration states rather than a run measures, so that a search can minimize
// what a configuration costs (`servelab search --minimize servers`):
//   servers       cluster.servers (1 without a cluster section)
//   memory_bytes  the memory the configuration provisions: servers x the byte budgets of the
//                 tiers a model passes through to execute (host, and device when
//                 engine.exec_tier is device); absent when one of those budgets is unlimited.
// The disk tier is never counted (it is never limited). Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace servelab::experiments {

std::vector<std::string> config_metric_names();

// The metrics of one resolved config (experiments::resolve_config). Throws
// std::invalid_argument naming the key on a malformed engine section or servers count.
std::map<std::string, double> config_metrics(const YAML::Node& config);

}  // namespace servelab::experiments
