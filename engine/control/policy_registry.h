// Name-to-factory registry of policies, so a YAML config selects a policy and its parameters
// by name. Built-in policies are registered on first use. Registration is not thread-safe:
// register custom policies at startup, before any controller is created.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/control/policy.h"

namespace servelab {

using BatchingFactory =
    std::function<std::unique_ptr<BatchingPolicy>(const PolicyParams&, const ModelInfo&)>;
using EvictionFactory = std::function<std::unique_ptr<EvictionPolicy>(const PolicyParams&)>;
using SchedulingFactory = std::function<std::unique_ptr<SchedulingPolicy>(const PolicyParams&)>;

class PolicyRegistry {
 public:
  static void add_batching(const std::string& name, std::string help, BatchingFactory f);
  static void add_eviction(const std::string& name, std::string help, EvictionFactory f);
  static void add_scheduling(const std::string& name, std::string help, SchedulingFactory f);

  // Throw ConfigError naming the known policies when `spec.name` is unknown or a parameter
  // is invalid.
  static std::unique_ptr<BatchingPolicy> batching(const PolicySpec& spec, const ModelInfo& m);
  static std::unique_ptr<EvictionPolicy> eviction(const PolicySpec& spec);
  static std::unique_ptr<SchedulingPolicy> scheduling(const PolicySpec& spec);

  // Sorted names, for --help output and for contract tests that loop over every policy.
  static std::vector<std::string> batching_names();
  static std::vector<std::string> eviction_names();
  static std::vector<std::string> scheduling_names();
  static std::string help(const std::string& name);
};

}  // namespace servelab
