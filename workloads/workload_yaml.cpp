// The `workload:` YAML section: strict parsing (unknown keys are errors) and emission.
// The keys of `arrival:` and `access:` come from their type's registry entry.
// Schema and units: docs/workloads.md.
#include <yaml-cpp/yaml.h>

#include <set>
#include <stdexcept>
#include <string>

#include "workloads/access_patterns.h"
#include "workloads/arrivals.h"
#include "workloads/workload.h"
#include "workloads/yaml_values.h"

namespace servelab::workloads {
namespace {

using detail::fail_at;

// Fails on a key that is neither `type`, `seed` nor one of the entry's keys.
template <class Entry>
void check_keys(const YAML::Node& section, const std::string& path, const Entry& entry) {
  for (const auto& kv : section) {
    const std::string key = kv.first.as<std::string>();
    if (key == "type" || key == "seed") continue;
    std::string allowed = "type, seed";
    bool known = false;
    for (const auto& k : entry.keys) {
      known = known || k.name == key;
      allowed += ", " + k.name;
    }
    if (!known)
      fail_at(path, "unknown key '" + key + "' for type " + entry.name + " (allowed: " +
                        allowed + ")");
  }
}

// Reads an `arrival:` or `access:` mapping: a registered `type`, an optional `seed`, and the
// keys that type's registry entry declares (defaults for the ones left out).
template <class Spec, class Entry>
Spec parse_section(const YAML::Node& n, const std::string& path,
                   const std::vector<Entry>& registry) {
  if (!n.IsMap()) fail_at(path, "expected a mapping with at least 'type'");
  if (!n["type"]) fail_at(path, "missing 'type'");
  const Entry& entry = detail::require_type(registry, detail::yaml_text(n["type"], path + ".type"),
                                            path);
  check_keys(n, path, entry);
  Spec spec;
  spec.type = entry.name;
  if (n["seed"]) spec.seed = detail::yaml_count(n["seed"], path + ".seed");
  for (const auto& key : entry.keys)
    if (n[key.name]) key.read(n[key.name], path + "." + key.name, spec);
  return spec;
}

// Writes `type`, `seed` and every key of the spec's type (an unregistered type: only those two).
template <class Spec, class Entry>
void emit_section(YAML::Emitter& out, const char* name, const Spec& spec,
                  const std::vector<Entry>& registry) {
  out << YAML::Key << name << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "type" << YAML::Value << spec.type;
  out << YAML::Key << "seed" << YAML::Value << spec.seed;
  if (const Entry* entry = detail::find_type(registry, spec.type)) {
    for (const auto& key : entry->keys) {
      out << YAML::Key << key.name << YAML::Value;
      key.write(out, spec);
    }
  }
  out << YAML::EndMap;
}

}  // namespace

WorkloadSpec parse_workload(const YAML::Node& node, uint32_t num_models) {
  YAML::Node root = node;
  if (root.IsMap() && root.size() == 1 && root["workload"]) root = root["workload"];
  static const char* kKeys = "requests, duration, warmup, arrival, access, images";
  if (!root.IsMap()) fail_at("workload", std::string("expected a mapping (") + kKeys + ")");
  static const std::set<std::string> kTop = {"requests", "duration", "warmup", "arrival", "access",
                                             "images"};
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (!kTop.count(key))
      fail_at("workload", "unknown key '" + key + "' (allowed: " + kKeys + ")");
  }
  WorkloadSpec spec;
  spec.num_models = num_models;
  if (root["requests"]) spec.requests = detail::yaml_count(root["requests"], "workload.requests");
  if (root["duration"]) spec.duration = detail::yaml_number(root["duration"], "workload.duration");
  if (root["warmup"]) spec.warmup = detail::yaml_number(root["warmup"], "workload.warmup");
  if (const YAML::Node& images = root["images"]) {
    if (!images.IsScalar() || images.Scalar().empty())
      fail_at("workload.images", "expected a folder (labels.txt and its images)");
    spec.images = images.Scalar();
  }
  if (root["arrival"])
    spec.arrival = parse_section<ArrivalSpec>(root["arrival"], "workload.arrival",
                                              detail::arrival_registry());
  if (root["access"])
    spec.access = parse_section<AccessSpec>(root["access"], "workload.access",
                                            detail::access_registry());
  validate(spec);
  return spec;
}

std::string to_yaml(const WorkloadSpec& spec) {
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << YAML::BeginMap << YAML::Key << "workload" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "requests" << YAML::Value << spec.requests;
  out << YAML::Key << "duration" << YAML::Value << spec.duration;
  out << YAML::Key << "warmup" << YAML::Value << spec.warmup;
  emit_section(out, "arrival", spec.arrival, detail::arrival_registry());
  emit_section(out, "access", spec.access, detail::access_registry());
  if (!spec.images.empty()) out << YAML::Key << "images" << YAML::Value << spec.images;
  out << YAML::EndMap << YAML::EndMap;
  return out.c_str();
}

}  // namespace servelab::workloads
