// The `workload:` YAML section: strict parsing (unknown keys are errors) and emission.
// Schema and units: docs/workloads.md.
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "workloads/workload.h"

namespace servelab::workloads {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::invalid_argument(path + ": " + what);
}

std::string scalar(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) fail(path, "expected a single value");
  return n.Scalar();
}

double get_double(const YAML::Node& n, const std::string& path) {
  const std::string s = scalar(n, path);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v))
    fail(path, "expected a number, got '" + s + "'");
  return v;
}

uint64_t get_uint(const YAML::Node& n, const std::string& path) {
  const std::string s = scalar(n, path);
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && p == s.data() + s.size()) return v;
  const double d = get_double(n, path);  // accept 1e6
  if (d < 0 || d != std::floor(d) || d > 1.8e19)
    fail(path, "expected a non-negative integer, got '" + s + "'");
  return static_cast<uint64_t>(d);
}

// Keys each section accepts, by type. `type` and `seed` are accepted for every type.
const std::map<std::string, std::set<std::string>> kArrivalKeys = {
    {"closed", {"concurrency", "think_time_ms"}},
    {"poisson", {"rate"}},
    {"constant", {"rate"}},
    {"sine", {"peak_base", "period_s", "noise", "interval_s"}},
    {"trace", {"file", "time_scale"}},
};
const std::map<std::string, std::set<std::string>> kAccessKeys = {
    {"sequential", {}},          {"uniform", {}},          {"zipf", {"alpha"}},
    {"pareto", {"alpha"}},       {"weights", {"weights"}}, {"trace", {"file", "column"}},
};

// Checks that `section` is a map with a known `type` and only that type's keys.
std::string check_section(const YAML::Node& section, const std::string& path,
                          const std::map<std::string, std::set<std::string>>& keys) {
  if (!section.IsMap()) fail(path, "expected a mapping with at least 'type'");
  if (!section["type"]) fail(path, "missing 'type'");
  const std::string type = scalar(section["type"], path + ".type");
  auto it = keys.find(type);
  if (it == keys.end()) {
    std::string names;
    for (const auto& [name, unused] : keys) names += (names.empty() ? "" : ", ") + name;
    fail(path + ".type", "unknown type '" + type + "' (expected one of: " + names + ")");
  }
  for (const auto& kv : section) {
    const std::string key = kv.first.as<std::string>();
    if (key == "type" || key == "seed" || it->second.count(key)) continue;
    std::string allowed = "type, seed";
    for (const auto& k : it->second) allowed += ", " + k;
    fail(path, "unknown key '" + key + "' for type " + type + " (allowed: " + allowed + ")");
  }
  return type;
}

ArrivalSpec parse_arrival(const YAML::Node& n) {
  const std::string path = "workload.arrival";
  ArrivalSpec a;
  a.type = check_section(n, path, kArrivalKeys);
  if (n["seed"]) a.seed = get_uint(n["seed"], path + ".seed");
  if (n["concurrency"]) {
    const uint64_t c = get_uint(n["concurrency"], path + ".concurrency");
    if (c == 0 || c > 1'000'000) fail(path + ".concurrency", "must be in 1..1000000");
    a.concurrency = static_cast<uint32_t>(c);
  }
  if (n["think_time_ms"]) a.think_time = get_double(n["think_time_ms"], path + ".think_time_ms") / 1000;
  if (n["rate"]) a.rate = get_double(n["rate"], path + ".rate");
  if (n["peak_base"]) a.peak_base = get_double(n["peak_base"], path + ".peak_base");
  if (n["period_s"]) a.period = get_double(n["period_s"], path + ".period_s");
  if (n["noise"]) a.noise = get_double(n["noise"], path + ".noise");
  if (n["interval_s"]) a.interval = get_double(n["interval_s"], path + ".interval_s");
  if (n["file"]) a.trace_file = scalar(n["file"], path + ".file");
  if (n["time_scale"]) a.time_scale = get_double(n["time_scale"], path + ".time_scale");
  return a;
}

AccessSpec parse_access(const YAML::Node& n) {
  const std::string path = "workload.access";
  AccessSpec a;
  a.type = check_section(n, path, kAccessKeys);
  if (n["seed"]) a.seed = get_uint(n["seed"], path + ".seed");
  if (n["alpha"]) a.alpha = get_double(n["alpha"], path + ".alpha");
  if (n["weights"]) {
    if (!n["weights"].IsSequence()) fail(path + ".weights", "expected a list of numbers");
    for (size_t i = 0; i < n["weights"].size(); ++i)
      a.weights.push_back(
          get_double(n["weights"][i], path + ".weights[" + std::to_string(i) + "]"));
  }
  if (n["file"]) a.trace_file = scalar(n["file"], path + ".file");
  if (n["column"]) a.trace_column = scalar(n["column"], path + ".column");
  return a;
}

}  // namespace

WorkloadSpec parse_workload(const YAML::Node& node, uint32_t num_models) {
  YAML::Node root = node;
  if (root.IsMap() && root.size() == 1 && root["workload"]) root = root["workload"];
  static const char* kKeys = "requests, duration, warmup, arrival, access";
  if (!root.IsMap()) fail("workload", std::string("expected a mapping (") + kKeys + ")");
  static const std::set<std::string> kTop = {"requests", "duration", "warmup", "arrival", "access"};
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (!kTop.count(key))
      fail("workload", "unknown key '" + key + "' (allowed: " + kKeys + ")");
  }
  WorkloadSpec spec;
  spec.num_models = num_models;
  if (root["requests"]) spec.requests = get_uint(root["requests"], "workload.requests");
  if (root["duration"]) spec.duration = get_double(root["duration"], "workload.duration");
  if (root["warmup"]) spec.warmup = get_double(root["warmup"], "workload.warmup");
  if (root["arrival"]) spec.arrival = parse_arrival(root["arrival"]);
  if (root["access"]) spec.access = parse_access(root["access"]);
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
  const ArrivalSpec& a = spec.arrival;
  out << YAML::Key << "arrival" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "type" << YAML::Value << a.type;
  out << YAML::Key << "seed" << YAML::Value << a.seed;
  if (a.type == "closed") {
    out << YAML::Key << "concurrency" << YAML::Value << a.concurrency;
    out << YAML::Key << "think_time_ms" << YAML::Value << a.think_time * 1000;
  } else if (a.type == "poisson" || a.type == "constant") {
    out << YAML::Key << "rate" << YAML::Value << a.rate;
  } else if (a.type == "sine") {
    out << YAML::Key << "peak_base" << YAML::Value << a.peak_base;
    out << YAML::Key << "period_s" << YAML::Value << a.period;
    out << YAML::Key << "noise" << YAML::Value << a.noise;
    out << YAML::Key << "interval_s" << YAML::Value << a.interval;
  } else if (a.type == "trace") {
    out << YAML::Key << "file" << YAML::Value << a.trace_file;
    out << YAML::Key << "time_scale" << YAML::Value << a.time_scale;
  }
  out << YAML::EndMap;
  const AccessSpec& c = spec.access;
  out << YAML::Key << "access" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "type" << YAML::Value << c.type;
  out << YAML::Key << "seed" << YAML::Value << c.seed;
  if (c.type == "zipf" || c.type == "pareto") {
    out << YAML::Key << "alpha" << YAML::Value << c.alpha;
  } else if (c.type == "weights") {
    out << YAML::Key << "weights" << YAML::Value << YAML::Flow << c.weights;
  } else if (c.type == "trace") {
    out << YAML::Key << "file" << YAML::Value << c.trace_file;
    out << YAML::Key << "column" << YAML::Value << c.trace_column;
  }
  out << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  return out.c_str();
}

}  // namespace servelab::workloads
