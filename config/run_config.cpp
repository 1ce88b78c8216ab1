#include "config/run_config.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "common/model_name.h"
#include "config/bounds.h"
#include "config/groups_yaml.h"
#include "config/simulation_yaml.h"
#include "config/yaml_util.h"

namespace servelab::config {

namespace fs = std::filesystem;

namespace {

std::string resolve_path(const std::string& p, const std::string& base_dir) {
  if (p.empty() || fs::path(p).is_absolute() || base_dir.empty()) return p;
  return (fs::path(base_dir) / p).lexically_normal().string();
}

uint32_t bounded(const YAML::Node& n, const Where& w, uint32_t lo, uint32_t hi) {
  const uint64_t v = as_uint(n, w);
  if (v < lo || v > hi)
    fail(w, n, "must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  return uint32_t(v);
}

// `models: {count, prefix, profile_model}`: count models named PREFIX-0, PREFIX-1, ...
std::vector<ModelEntry> parse_model_family(const YAML::Node& n, const Where& w) {
  check_keys(n, w, {"count", "prefix", "profile_model"});
  if (!n["count"] || !n["profile_model"]) fail(w, n, "needs count and profile_model");
  const uint64_t count = as_uint(n["count"], w.child("count"));
  if (!kModelCount.holds(count))
    fail(w.child("count"), n["count"],
         "must be in " + std::to_string(kModelCount.lo) + ".." + std::to_string(kModelCount.hi) +
             " (the limit on a run's models), got " + std::to_string(count));
  const std::string pm = as_model_name(n["profile_model"], w.child("profile_model"));
  const std::string prefix = n["prefix"] ? as_model_name(n["prefix"], w.child("prefix")) : pm;
  std::vector<ModelEntry> out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) out.push_back({prefix + "-" + std::to_string(i), pm});
  if (std::string why = model_name_problem(out.back().name); !why.empty())
    fail(w.child("prefix"), n["prefix"] ? n["prefix"] : n, why + " (the prefix plus '-' and the index)");
  return out;
}

// One list entry: a name, or {name, profile_model, contexts, max_batch, slo_ms}.
ModelEntry parse_model_entry(const YAML::Node& e, const Where& w) {
  if (e.IsScalar()) {
    const std::string name = as_model_name(e, w);
    return {name, name};
  }
  check_keys(e, w, {"name", "profile_model", "contexts", "max_batch", "slo_ms"});
  if (!e.IsMap() || !e["name"]) fail(w, e, "needs 'name'");
  ModelEntry m;
  m.name = as_model_name(e["name"], w.child("name"));
  m.profile_model =
      e["profile_model"] ? as_model_name(e["profile_model"], w.child("profile_model")) : m.name;
  if (e["contexts"]) m.contexts = bounded(e["contexts"], w.child("contexts"), kContexts.lo, kContexts.hi);
  if (e["max_batch"])
    m.max_batch = bounded(e["max_batch"], w.child("max_batch"), kMaxBatch.lo, kMaxBatch.hi);
  if (e["slo_ms"]) m.slo = parse_ms(e["slo_ms"], w.child("slo_ms"), false);
  return m;
}

void check_unique_names(const std::vector<ModelEntry>& models, const YAML::Node& n, const Where& w) {
  std::vector<std::string> names;
  names.reserve(models.size());
  for (const ModelEntry& m : models) names.push_back(m.name);
  std::sort(names.begin(), names.end());
  const auto twice = std::adjacent_find(names.begin(), names.end());
  if (twice != names.end()) fail(w, n, "model '" + *twice + "' listed twice");
}

}  // namespace

// `models:` {count, prefix, profile_model} or a list of names / entries.
std::vector<ModelEntry> parse_models_section(const YAML::Node& n, const Where& w) {
  if (!n) fail(w, n, "missing (a list of model names, or {count, prefix, profile_model})");
  if (n.IsMap()) return parse_model_family(n, w);
  if (!n.IsSequence() || n.size() == 0) fail(w, n, "expected a non-empty list or a mapping");
  std::vector<ModelEntry> out;
  for (size_t i = 0; i < n.size(); ++i) out.push_back(parse_model_entry(n[i], w.child(std::to_string(i))));
  check_unique_names(out, n, w);
  return out;
}

namespace {

std::string parse_profile_path(const YAML::Node& root, const Where& w, const std::string& base_dir) {
  const YAML::Node& p = root["profile"];
  if (!p) fail(w, root, "missing 'profile' (a cost profile file)");
  if (p.IsScalar() && p.Scalar() == "local")
    fail(w.child("profile"), p,
         "'local' (this machine's measured profile) is resolved by `servelab run`; here give "
         "the file: --set profile=PATH (`servelab measure` writes "
         "experiments/profiles/local/<host>.yaml)");
  const std::string path = as_string(p, w.child("profile"));
  if (path.empty()) fail(w.child("profile"), p, "must name a cost profile file");
  return resolve_path(path, base_dir);
}

workloads::WorkloadSpec parse_workload_section(const YAML::Node& root, const RunConfig& c,
                                               const std::string& base_dir) {
  if (!root["workload"]) throw ConfigError(c.file + (c.file.empty() ? "" : ": ") +
                                           "missing 'workload' (see docs/workloads.md)");
  workloads::WorkloadSpec spec;
  try {
    // Groups follow the models in the workload's indices: a request addresses either.
    spec = workloads::parse_workload(root["workload"], uint32_t(c.models.size() + c.groups.size()));
  } catch (const std::invalid_argument& e) {
    throw ConfigError((c.file.empty() ? "" : c.file + ": ") + e.what());
  }
  spec.access.trace_file = resolve_path(spec.access.trace_file, base_dir);
  spec.arrival.trace_file = resolve_path(spec.arrival.trace_file, base_dir);
  return spec;
}

WarmUpSection parse_warm_up(const YAML::Node& n, const Where& w) {
  WarmUpSection s;
  if (!n) return s;
  require_map(n, w);
  check_keys(n, w, {"clients", "requests_per_model", "pause_quanta", "min_pause_s"});
  if (!n.IsMap()) return s;
  if (n["clients"]) s.clients = bounded(n["clients"], w.child("clients"), 1, 1024);
  if (n["requests_per_model"])
    s.requests_per_model = bounded(n["requests_per_model"], w.child("requests_per_model"), 0, 100000);
  for (const char* key : {"pause_quanta", "min_pause_s"}) {
    if (!n[key]) continue;
    const double v = as_double(n[key], w.child(key));
    if (!(v >= 0) || !(v <= 3600)) fail(w.child(key), n[key], "expected a number in 0..3600");
    (std::string(key) == "pause_quanta" ? s.pause_quanta : s.min_pause_s) = v;
  }
  return s;
}

YAML::Node emit_warm_up(const WarmUpSection& s) {
  YAML::Node n;
  n["clients"] = s.clients;
  n["requests_per_model"] = s.requests_per_model;
  n["pause_quanta"] = s.pause_quanta;
  n["min_pause_s"] = s.min_pause_s;
  return n;
}

std::vector<std::string> all_keys() {
  std::vector<std::string> keys = run_config_keys();
  keys.insert(keys.end(), experiment_keys().begin(), experiment_keys().end());
  return keys;
}

}  // namespace

const std::vector<std::string>& run_config_keys() {
  static const std::vector<std::string> keys = {
      "name",       "models",  "profile",        "engine",     "policies", "workload",
      "simulation", "cluster", "engine_warm_up", "description", "groups", "accuracy_table",
      "train"};  // read by `servelab train` (learn/train/), ignored by the other modes
  return keys;
}

const std::vector<std::string>& experiment_keys() {
  static const std::vector<std::string> keys = {
      "title", "paper", "figure", "claim", "scaled_down", "modes", "repetitions", "seeds",
      "more_repetitions", "skip", "seed_paths", "sweep", "figures", "labels", "sim", "real",
      "regression", "mode_titles"};
  return keys;
}

bool is_experiment_key(const std::string& key) {
  const auto& k = experiment_keys();
  return std::find(k.begin(), k.end(), key) != k.end();
}

uint32_t RunConfig::contexts_of(const ModelEntry& m) const {
  return m.contexts ? m.contexts : engine.contexts;
}

uint32_t RunConfig::max_batch_of(const ModelEntry& m) const {
  return m.max_batch ? m.max_batch : engine.control.max_batch;
}

double RunConfig::accuracy_of(const std::string& model) const {
  for (const GroupEntry& g : groups) {
    auto it = std::find(g.members.begin(), g.members.end(), model);
    if (it != g.members.end()) return g.accuracy.of(MemberMask(1) << (it - g.members.begin()));
  }
  auto it = model_accuracy.find(model);
  return it == model_accuracy.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

// Policy parameters that name files (rafiki-rl's weights) are relative to the config file.
static void resolve_policy_files(ControllerConfig& c, const std::string& base_dir) {
  for (PolicySpec* spec : {&c.batching, &c.eviction, &c.scheduling})
    if (spec->params.has("weights"))
      spec->params.set("weights", resolve_path(spec->params.get_string("weights", ""), base_dir));
}

// `accuracy_table:`: every model's own accuracy from the table (its entry alone).
static void parse_model_accuracy(const YAML::Node& root, const Where& w,
                                 const std::string& base_dir, RunConfig& c) {
  const YAML::Node& n = root["accuracy_table"];
  if (!n) return;
  c.accuracy_table = resolve_path(as_string(n, w.child("accuracy_table")), base_dir);
  for (const ModelEntry& m : c.models)
    c.model_accuracy[m.name] = read_accuracy_table(c.accuracy_table, {m.name}).of(1);
}

RunConfig parse_run_config(const YAML::Node& root, const std::string& file,
                           const std::string& base_dir, std::optional<uint64_t> seed) {
  const Where w{file, ""};
  if (!root.IsMap()) fail(w, root, "expected a mapping (name, models, profile, engine, ...)");
  check_keys(root, w, all_keys());
  RunConfig c;
  c.file = file;
  c.name = root["name"] ? as_string(root["name"], w.child("name"))
                        : (file.empty() ? "simulation" : fs::path(file).stem().string());
  c.models = parse_models_section(root["models"], w.child("models"));
  c.groups = parse_groups_section(root["groups"], w.child("groups"), c.models, base_dir);
  parse_model_accuracy(root, w, base_dir, c);
  c.profile = parse_profile_path(root, w, base_dir);
  c.engine = parse_engine_section(root, file);
  resolve_policy_files(c.engine.control, base_dir);
  c.simulation = parse_simulation_section(root["simulation"], w.child("simulation"));
  c.cluster = parse_cluster_section(root["cluster"], w.child("cluster"));
  c.workload = parse_workload_section(root, c, base_dir);
  c.warm_up = parse_warm_up(root["engine_warm_up"], w.child("engine_warm_up"));
  if (seed) {
    c.simulation.seed = *seed;
    c.workload.access.seed = *seed;
    c.workload.arrival.seed = *seed + 1;
  }
  return c;
}

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides,
                          std::optional<uint64_t> seed, bool merge_sim) {
  YAML::Node root = load_file(path);
  if (merge_sim && root.IsMap() && root["sim"]) {
    merge_into(root, root["sim"]);
    root.remove("sim");
  }
  for (const std::string& o : overrides) apply_override(root, o);
  const std::string base = fs::path(path).parent_path().string();
  return parse_run_config(root, path, base.empty() ? "." : base, seed);
}

namespace {

// The sections every run config has, with or without models: engine (and policies),
// workload, simulation, cluster and engine_warm_up.
void emit_settings(const RunConfig& c, YAML::Node& r) {
  emit_engine_section(c.engine, r);
  r["workload"] = YAML::Load(workloads::to_yaml(c.workload))["workload"];
  r["simulation"] = emit_simulation_section(c.simulation);
  r["cluster"] = emit_cluster_section(c.cluster);
  r["engine_warm_up"] = emit_warm_up(c.warm_up);
}

}  // namespace

YAML::Node emit_run_config(const RunConfig& c) {
  YAML::Node r;
  r["name"] = c.name;
  for (const ModelEntry& m : c.models) {
    YAML::Node n;
    n["name"] = m.name;
    n["profile_model"] = m.profile_model;
    n["contexts"] = c.contexts_of(m);
    n["max_batch"] = c.max_batch_of(m);
    if (m.slo) n["slo_ms"] = to_ms(*m.slo);
    r["models"].push_back(n);
  }
  if (!c.groups.empty()) r["groups"] = emit_groups_section(c.groups);
  if (!c.accuracy_table.empty())
    r["accuracy_table"] = fs::absolute(c.accuracy_table).lexically_normal().string();
  r["profile"] = fs::absolute(c.profile).lexically_normal().string();
  emit_settings(c, r);
  return r;
}

YAML::Node default_config_tree() {
  YAML::Node r;
  emit_settings(RunConfig{}, r);
  return r;
}

}  // namespace servelab::config
