#include "config/profile_load_sources.h"

#include <cmath>
#include <string>
#include <utility>

namespace servelab::config {

namespace {

// The phases as YAML keys, with the field each one fills.
constexpr std::pair<const char*, double LoadCost::*> kPhases[] = {
    {"read", &LoadCost::read},   {"deserialize", &LoadCost::deserialize},
    {"copy", &LoadCost::copy},   {"share", &LoadCost::share},
    {"first_batch", &LoadCost::first_batch}};

LoadCost parse_cost(const YAML::Node& n, const Where& w) {
  require_map(n, w);
  check_keys(n, w, {"read", "deserialize", "copy", "share", "first_batch"});
  LoadCost c;
  for (const auto& [key, field] : kPhases) {
    if (!n[key]) continue;
    const double ms = as_double(n[key], w.child(key));
    if (!(ms >= 0) || !std::isfinite(ms)) fail(w.child(key), n[key], "expected milliseconds >= 0");
    c.*field = ms / 1e3;
  }
  return c;
}

}  // namespace

void parse_load_sources(const YAML::Node& n, const Where& w, ModelProfile& m) {
  if (!n) return;
  require_map(n, w);
  for (const auto& kv : n) {
    const std::string key = kv.first.as<std::string>();
    LoadSource s;
    if (!parse_load_source(key, &s))
      fail(w.child(key), kv.first,
           "unknown load source '" + key + "' (expected file, file-cold, store, store-cold or store-sibling)");
    m.load_sources[int(s)] = parse_cost(kv.second, w.child(key));
  }
}

YAML::Node load_sources_to_yaml(const ModelProfile& m) {
  YAML::Node out;
  for (int s = 0; s < kLoadSourceCount; ++s) {
    const std::optional<LoadCost>& c = m.load_sources[s];
    if (!c) continue;
    YAML::Node phases;
    for (const auto& [key, field] : kPhases) phases[key] = (*c).*field * 1e3;
    out[load_source_name(LoadSource(s))] = phases;
  }
  return out;
}

}  // namespace servelab::config
