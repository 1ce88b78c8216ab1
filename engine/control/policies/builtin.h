// Internal: the tables behind PolicyRegistry and the functions that fill them with the
// built-in policies. Not part of the contract.
#pragma once

#include <initializer_list>
#include <map>
#include <string>

#include "engine/control/policy_registry.h"

namespace servelab::detail {

template <class Factory>
struct PolicyEntry {
  std::string help;
  Factory factory;
};

struct PolicyTables {
  std::map<std::string, PolicyEntry<BatchingFactory>> batching;
  std::map<std::string, PolicyEntry<EvictionFactory>> eviction;
  std::map<std::string, PolicyEntry<SchedulingFactory>> scheduling;
};

void add_builtin_batching(PolicyTables& t);    // policies/batching_basic.cpp, rafiqi.cpp
void add_builtin_rafiqi(PolicyTables& t);
void add_builtin_eviction(PolicyTables& t);    // policies/eviction.cpp
void add_builtin_scheduling(PolicyTables& t);  // policies/scheduling.cpp

// Throws ConfigError when `p` has a key not in `known` (catches typos in YAML configs).
void check_keys(const PolicyParams& p, std::initializer_list<const char*> known);

}  // namespace servelab::detail
