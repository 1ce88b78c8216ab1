// PolicyRegistry: name-to-factory tables, filled with the built-ins on first use (a
// function-local static, so static libraries and static-init order do not matter).
#include "engine/control/policy_registry.h"

#include "engine/control/policies/builtin.h"

namespace servelab {

namespace detail {

void check_keys(const PolicyParams& p, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : p.values()) {
    bool ok = false;
    std::string names;
    for (const char* k : known) {
      ok = ok || key == k;
      names += names.empty() ? k : std::string(", ") + k;
    }
    if (!ok)
      throw ConfigError("unknown parameter '" + key + "' (known: " +
                        (names.empty() ? std::string("none") : names) + ")");
  }
}

}  // namespace detail

namespace {

detail::PolicyTables& tables() {
  static detail::PolicyTables t = [] {
    detail::PolicyTables init;
    detail::add_builtin_batching(init);
    detail::add_builtin_rafiqi(init);
    detail::add_builtin_clipper(init);
    detail::add_builtin_rafiki(init);
    detail::add_builtin_eviction(init);
    detail::add_builtin_scheduling(init);
    return init;
  }();
  return t;
}

template <class Map>
std::vector<std::string> names_of(const Map& m) {
  std::vector<std::string> out;
  for (const auto& [name, entry] : m) out.push_back(name);
  return out;  // std::map: already sorted
}

template <class Map>
const typename Map::mapped_type& find(const Map& m, const std::string& name, const char* kind) {
  auto it = m.find(name);
  if (it == m.end()) {
    std::string known;
    for (const auto& [n, e] : m) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError(std::string("unknown ") + kind + " policy '" + name + "' (known: " +
                      known + ")");
  }
  return it->second;
}

// Runs a factory, prefixing parameter errors with the policy they belong to.
template <class F>
auto build(const char* kind, const std::string& name, F&& make) {
  try {
    return make();
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(kind) + " policy '" + name + "': " + e.what());
  }
}

}  // namespace

void PolicyRegistry::add_batching(const std::string& name, std::string help, BatchingFactory f) {
  tables().batching[name] = {std::move(help), std::move(f)};
}
void PolicyRegistry::add_eviction(const std::string& name, std::string help, EvictionFactory f) {
  tables().eviction[name] = {std::move(help), std::move(f)};
}
void PolicyRegistry::add_scheduling(const std::string& name, std::string help,
                                    SchedulingFactory f) {
  tables().scheduling[name] = {std::move(help), std::move(f)};
}

std::unique_ptr<BatchingPolicy> PolicyRegistry::batching(const PolicySpec& spec,
                                                         const ModelInfo& m) {
  const auto& e = find(tables().batching, spec.name, "batching");
  return build("batching", spec.name, [&] { return e.factory(spec.params, m); });
}

std::unique_ptr<EvictionPolicy> PolicyRegistry::eviction(const PolicySpec& spec) {
  const auto& e = find(tables().eviction, spec.name, "eviction");
  return build("eviction", spec.name, [&] { return e.factory(spec.params); });
}

std::unique_ptr<SchedulingPolicy> PolicyRegistry::scheduling(const PolicySpec& spec) {
  const auto& e = find(tables().scheduling, spec.name, "scheduling");
  return build("scheduling", spec.name, [&] { return e.factory(spec.params); });
}

std::vector<std::string> PolicyRegistry::batching_names() { return names_of(tables().batching); }
std::vector<std::string> PolicyRegistry::eviction_names() { return names_of(tables().eviction); }
std::vector<std::string> PolicyRegistry::scheduling_names() {
  return names_of(tables().scheduling);
}

// Help of the named policy, looked up among batching, eviction and scheduling policies
// (in that order). Throws ConfigError for an unknown name.
std::string PolicyRegistry::help(const std::string& name) {
  const auto& t = tables();
  if (auto it = t.batching.find(name); it != t.batching.end()) return it->second.help;
  if (auto it = t.eviction.find(name); it != t.eviction.end()) return it->second.help;
  if (auto it = t.scheduling.find(name); it != t.scheduling.end()) return it->second.help;
  throw ConfigError("unknown policy '" + name + "'");
}

}  // namespace servelab
