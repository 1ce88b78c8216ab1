// Building blocks of the arrival-process and access-pattern registries (private to
// servelab_workloads): a type's YAML keys, and lookup of a type by its `type:` name.
// The registries themselves are constant tables next to their generators:
// arrival_registry() in arrivals.cpp and access_registry() in access_patterns.cpp.
// Parsing, validation, generation and to_yaml all go through them; immutable, so any thread
// may read them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "workloads/yaml_values.h"

namespace servelab::workloads::detail {

// One YAML key of a type, besides `type` and `seed` which every type accepts: how its value
// is read into a spec (with checks; `path` names it in errors) and written back by to_yaml.
template <class Spec>
struct SpecKey {
  std::string name;
  std::function<void(const YAML::Node& value, const std::string& path, Spec& spec)> read;
  std::function<void(YAML::Emitter& out, const Spec& spec)> write;
};

// A number field; the YAML value is the field times `scale` (think_time_ms: 1000 x seconds).
template <class Spec>
SpecKey<Spec> number_key(std::string name, double Spec::*field, double scale = 1) {
  return {std::move(name),
          [field, scale](const YAML::Node& v, const std::string& path, Spec& s) {
            s.*field = yaml_number(v, path) / scale;
          },
          [field, scale](YAML::Emitter& out, const Spec& s) { out << s.*field * scale; }};
}

// An integer field that must lie in [min, max].
template <class Spec>
SpecKey<Spec> count_key(std::string name, uint32_t Spec::*field, uint32_t min, uint32_t max) {
  return {std::move(name),
          [field, min, max](const YAML::Node& v, const std::string& path, Spec& s) {
            const uint64_t c = yaml_count(v, path);
            if (c < min || c > max)
              fail_at(path, "must be in " + std::to_string(min) + ".." + std::to_string(max));
            s.*field = static_cast<uint32_t>(c);
          },
          [field](YAML::Emitter& out, const Spec& s) { out << s.*field; }};
}

// A text field (file paths, column names), kept as written.
template <class Spec>
SpecKey<Spec> text_key(std::string name, std::string Spec::*field) {
  return {std::move(name),
          [field](const YAML::Node& v, const std::string& path, Spec& s) {
            s.*field = yaml_text(v, path);
          },
          [field](YAML::Emitter& out, const Spec& s) { out << s.*field; }};
}

// A list of numbers, written back in flow style ([1, 2, 3]).
template <class Spec>
SpecKey<Spec> number_list_key(std::string name, std::vector<double> Spec::*field) {
  return {std::move(name),
          [field](const YAML::Node& v, const std::string& path, Spec& s) {
            if (!v.IsSequence()) fail_at(path, "expected a list of numbers");
            std::vector<double> values;
            for (size_t i = 0; i < v.size(); ++i)
              values.push_back(yaml_number(v[i], path + "[" + std::to_string(i) + "]"));
            s.*field = std::move(values);
          },
          [field](YAML::Emitter& out, const Spec& s) { out << YAML::Flow << s.*field; }};
}

// The registered names, comma-separated in registry order, for error messages.
template <class Entry>
std::string type_names(const std::vector<Entry>& registry) {
  std::string names;
  for (const Entry& e : registry) names += (names.empty() ? "" : ", ") + e.name;
  return names;
}

// The entry called `name`, or nullptr.
template <class Entry>
const Entry* find_type(const std::vector<Entry>& registry, const std::string& name) {
  for (const Entry& e : registry)
    if (e.name == name) return &e;
  return nullptr;
}

// The entry called `name`; throws std::invalid_argument listing the registered names.
template <class Entry>
const Entry& require_type(const std::vector<Entry>& registry, const std::string& name,
                          const std::string& path) {
  if (const Entry* e = find_type(registry, name)) return *e;
  fail_at(path + ".type",
          "unknown type '" + name + "' (expected one of: " + type_names(registry) + ")");
}

}  // namespace servelab::workloads::detail
