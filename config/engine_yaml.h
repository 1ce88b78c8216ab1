// Reading the `engine:` and `policies:` sections of a config (schema in docs/config.md),
// shared by `servelab simulate`, `servelab serve --config` and the experiment runner.
// Both sections are optional; absent keys keep ControllerConfig's defaults. Other top-level
// keys of `root` are left to the caller.
#pragma once

#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "config/yaml_util.h"
#include "engine/control/controller.h"

namespace servelab::config {

// Everything the two sections configure: the controller plus the per-model defaults and the
// SLO that the controller itself does not hold.
struct EngineSection {
  ControllerConfig control;
  std::optional<double> slo;  // seconds; sets request deadlines and enables SLO metrics
  uint32_t contexts = 1;      // default context pool size per model (Rafiqi)
  // `weights: private`: no model shared between requests (TrIMS's baseline, a FaaS cold
  // start): every batch loads its own copy from disk first, in the engine
  // (EngineOptions::private_weights) and the simulator alike. `shared` (default): the tiers
  // hold models for every request.
  bool private_weights = false;
};

// Throws ConfigError naming `file` (may be empty), the line and the key on an unknown key,
// a malformed value, or a tier budget on disk. Policy names are not checked here (the
// Controller checks them against the registry).
EngineSection parse_engine_section(const YAML::Node& root, const std::string& file = "");
ControllerConfig parse_engine_config(const YAML::Node& root, const std::string& file = "");

// The resolved sections with every default written out: sets root["engine"] and
// root["policies"]. parse_engine_section of the result gives back the same values.
void emit_engine_section(const EngineSection& section, YAML::Node& root);

// Milliseconds in a config: a finite number >= 0 (or, with allow_never, none/never/unlimited:
// kNever) read as seconds; and seconds written back as milliseconds without float noise for
// round values (5 ms stays 5, not 5.0000000001).
Time parse_ms(const YAML::Node& n, const Where& w, bool allow_never);
double to_ms(Time t);

// A policy (or router) selection: a name, or {name: ..., parameters...}; `fallback` when the
// node is absent. Throws ConfigError naming `w` on another shape. emit_policy writes it back.
PolicySpec parse_policy(const YAML::Node& n, const Where& w, const PolicySpec& fallback);
YAML::Node emit_policy(const PolicySpec& spec);

}  // namespace servelab::config
