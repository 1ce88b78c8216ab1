#include "simulator/sim_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "config/profile_yaml.h"
#include "config/yaml_util.h"
#include "simulator/event_list.h"
#include "simulator/router.h"

namespace servelab::sim {

namespace fs = std::filesystem;
using config::as_bool;
using config::as_string;
using config::as_uint;
using config::check_keys;
using config::fail;
using config::Where;

namespace {

std::string resolve_path(const std::string& p, const std::string& base_dir) {
  if (p.empty() || fs::path(p).is_absolute() || base_dir.empty()) return p;
  return (fs::path(base_dir) / p).lexically_normal().string();
}

struct ModelEntry {
  std::string name, profile_model;
  uint32_t contexts = 0, max_batch = 0;  // 0: engine defaults
};

// `models:` is {count, prefix, profile_model} or a list of names / {name, profile_model,
// contexts, max_batch}.
std::vector<ModelEntry> parse_models(const YAML::Node& n, const Where& w) {
  std::vector<ModelEntry> out;
  if (!n) fail(w, n, "missing (a list of model names, or {count, prefix, profile_model})");
  if (n.IsMap()) {
    check_keys(n, w, {"count", "prefix", "profile_model"});
    if (!n["count"] || !n["profile_model"]) fail(w, n, "needs count and profile_model");
    uint64_t count = as_uint(n["count"], w.child("count"));
    if (count == 0 || count > 1000000) fail(w.child("count"), n["count"], "must be in 1..1000000");
    std::string prefix = n["prefix"] ? as_string(n["prefix"], w.child("prefix"))
                                     : as_string(n["profile_model"], w.child("profile_model"));
    std::string pm = as_string(n["profile_model"], w.child("profile_model"));
    for (uint64_t i = 0; i < count; ++i) out.push_back({prefix + "-" + std::to_string(i), pm});
    return out;
  }
  if (!n.IsSequence() || n.size() == 0) fail(w, n, "expected a non-empty list or a mapping");
  for (size_t i = 0; i < n.size(); ++i) {
    Where wi = w.child(std::to_string(i));
    const YAML::Node& e = n[i];
    if (e.IsScalar()) {
      out.push_back({e.Scalar(), e.Scalar()});
      continue;
    }
    check_keys(e, wi, {"name", "profile_model", "contexts", "max_batch"});
    if (!e["name"]) fail(wi, e, "needs 'name'");
    ModelEntry m;
    m.name = as_string(e["name"], wi.child("name"));
    m.profile_model = e["profile_model"] ? as_string(e["profile_model"], wi.child("profile_model")) : m.name;
    if (e["contexts"]) m.contexts = uint32_t(as_uint(e["contexts"], wi.child("contexts")));
    if (e["max_batch"]) m.max_batch = uint32_t(as_uint(e["max_batch"], wi.child("max_batch")));
    out.push_back(m);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (out[i].name == out[j].name) fail(w, n, "model '" + out[i].name + "' listed twice");
    }
  }
  return out;
}

// `speed_trace:` a list of [from_s, factor] pairs, from_s strictly increasing and >= 0,
// factor > 0.
std::vector<SimulationSetup::SpeedWindow> parse_speed_trace(const YAML::Node& n, const Where& w) {
  if (!n.IsSequence()) fail(w, n, "expected a list of [from_s, factor] pairs");
  std::vector<SimulationSetup::SpeedWindow> out;
  for (size_t i = 0; i < n.size(); ++i) {
    Where wi = w.child(std::to_string(i));
    const YAML::Node& e = n[i];
    if (!e.IsSequence() || e.size() != 2) fail(wi, e, "expected [from_s, factor]");
    SimulationSetup::SpeedWindow sw{config::as_double(e[0], wi.child("0")),
                                    config::as_double(e[1], wi.child("1"))};
    if (!(sw.from >= 0) || !std::isfinite(sw.from) || (!out.empty() && !(sw.from > out.back().from)))
      fail(wi.child("0"), e[0], "expected a time in seconds >= 0, after the previous entry's");
    if (!(sw.factor > 0) || !std::isfinite(sw.factor))
      fail(wi.child("1"), e[1], "expected a positive factor");
    out.push_back(sw);
  }
  return out;
}

// `cluster:` {servers: N (1..4096), router: NAME or {name, parameters}} (router.h); absent:
// one server.
SimulationSetup::Cluster parse_cluster(const YAML::Node& n, const Where& w) {
  SimulationSetup::Cluster c;
  if (!n) return c;
  config::require_map(n, w);
  check_keys(n, w, {"servers", "router"});
  if (n["servers"]) {
    uint64_t k = as_uint(n["servers"], w.child("servers"));
    if (k < 1 || k > 4096) fail(w.child("servers"), n["servers"], "must be in 1..4096");
    c.servers = uint32_t(k);
  }
  c.router = config::parse_policy(n["router"], w.child("router"), c.router);
  try {
    make_router(c.router, 1);  // checks the name and parameters now, with the key's place
  } catch (const ConfigError& e) {
    fail(w.child("router"), n["router"], e.what());
  }
  return c;
}

// simulation.client_timeout_s (> 0, or none) and cancel_delay_s (>= 0).
void parse_cancellation(const YAML::Node& sim, const Where& ws, SimulationSetup& s) {
  if (const YAML::Node& t = sim["client_timeout_s"];
      t && !(t.IsScalar() && t.Scalar() == "none")) {
    s.client_timeout = config::as_double(t, ws.child("client_timeout_s"));
    if (!(s.client_timeout > 0) || !std::isfinite(s.client_timeout))
      fail(ws.child("client_timeout_s"), t, "expected seconds > 0 (or none)");
  }
  if (const YAML::Node& d = sim["cancel_delay_s"]) {
    s.cancel_delay = config::as_double(d, ws.child("cancel_delay_s"));
    if (!(s.cancel_delay >= 0) || !std::isfinite(s.cancel_delay))
      fail(ws.child("cancel_delay_s"), d, "expected seconds >= 0");
  }
}

}  // namespace

SimConfig parse_sim_config(const YAML::Node& root, const std::string& file,
                           const std::string& base_dir, std::optional<uint64_t> seed) {
  Where w{file, ""};
  if (!root.IsMap()) fail(w, root, "expected a mapping (name, models, profile, engine, ...)");
  // Experiment keys (experiments/experiment.h) belong to `servelab run`; simulate runs the
  // base config and ignores them (load_sim_config merges `sim:` first).
  check_keys(root, w, {"name", "models", "profile", "engine", "policies", "workload",
                       "simulation", "description", "claim", "scaled_down", "mode", "modes",
                       "title", "paper", "figure", "repetitions", "seeds", "more_repetitions",
                       "seed_paths", "sweep", "figures", "sim", "real", "regression",
                       "cluster"});
  SimConfig c;
  c.file = file;
  c.name = root["name"] ? as_string(root["name"], w.child("name"))
                        : (file.empty() ? "simulation" : fs::path(file).stem().string());

  std::vector<ModelEntry> models = parse_models(root["models"], w.child("models"));
  if (!root["profile"]) fail(w, root, "missing 'profile' (a cost profile file)");
  if (root["profile"].IsScalar() && root["profile"].Scalar() == "local")
    fail(w.child("profile"), root["profile"],
         "'local' (this machine's measured profile) is resolved by `servelab run`; here give "
         "the file: --set profile=PATH (`servelab profile` writes "
         "experiments/profiles/local/<host>.yaml)");
  c.profile_path = resolve_path(as_string(root["profile"], w.child("profile")), base_dir);
  const config::ProfileFile file_profile = config::load_profile_file(c.profile_path);
  const CostProfile& profile = file_profile.costs;

  c.engine = config::parse_engine_section(root, file);
  SimulationSetup& s = c.setup;
  s.control = c.engine.control;
  s.slo = c.engine.slo;
  for (const ModelEntry& m : models) {
    const ModelProfile* p = profile.find(m.profile_model);
    if (!p) {
      std::string known;
      for (const auto& n : profile.names()) known += (known.empty() ? "" : ", ") + n;
      fail(w.child("models"), root["models"],
           "model '" + m.name + "' uses profile entry '" + m.profile_model + "', which " +
               c.profile_path + " does not have (it has: " + known + ")");
    }
    const RequestOverhead* o = file_profile.front_end.overhead(m.profile_model);
    s.models.push_back({m.name, *p, m.contexts ? m.contexts : c.engine.contexts, m.max_batch,
                        o ? *o : RequestOverhead{}});
    c.profile_models.push_back(m.profile_model);
  }
  s.cold_bursts = file_profile.front_end.cold_bursts;

  Where ws = w.child("simulation");
  const YAML::Node& sim = root["simulation"];
  check_keys(sim, ws,
             {"noise", "seed", "preload", "max_time_s", "event_list", "io_threads", "cost_scale",
              "speed_trace", "jitter", "client_timeout_s", "cancel_delay_s"});
  double cost_scale = 1;
  if (sim && sim.IsMap()) {
    if (sim["cost_scale"]) {
      cost_scale = config::as_double(sim["cost_scale"], ws.child("cost_scale"));
      if (!(cost_scale > 0) || !std::isfinite(cost_scale))
        fail(ws.child("cost_scale"), sim["cost_scale"], "expected a positive number");
      for (SimModel& m : s.models) {
        m.profile.scale_costs(cost_scale);
        m.overhead.scale(cost_scale);
      }
      scale_cold_bursts(s.cold_bursts, cost_scale);
    }
    if (sim["speed_trace"]) s.speed_trace = parse_speed_trace(sim["speed_trace"], ws.child("speed_trace"));
    if (sim["jitter"]) {
      s.jitter = config::as_double(sim["jitter"], ws.child("jitter"));
      if (!(s.jitter >= 0) || !std::isfinite(s.jitter))
        fail(ws.child("jitter"), sim["jitter"], "expected a relative standard deviation >= 0");
    }
    if (sim["noise"]) {
      // true = normal, false = none, or the kind by name.
      std::string v = as_string(sim["noise"], ws.child("noise"));
      if (!parse_cost_noise(v, &s.noise)) {
        s.noise = as_bool(sim["noise"], ws.child("noise")) ? CostNoise::Normal : CostNoise::None;
      }
    }
    if (sim["seed"]) s.seed = as_uint(sim["seed"], ws.child("seed"));
    if (sim["preload"]) {
      std::string v = as_string(sim["preload"], ws.child("preload"));
      if (v == "none") s.preload_tier = Tier::Disk;
      else if (!parse_tier(v, &s.preload_tier)) {
        fail(ws.child("preload"), sim["preload"], "expected none, host or device, got '" + v + "'");
      }
    }
    if (sim["max_time_s"] && as_string(sim["max_time_s"], ws.child("max_time_s")) != "none") {
      s.max_time = config::as_double(sim["max_time_s"], ws.child("max_time_s"));
    }
    if (sim["io_threads"])
      s.io_threads = static_cast<uint32_t>(config::as_uint(sim["io_threads"], ws.child("io_threads")));
    if (sim["event_list"]) {
      s.event_list = as_string(sim["event_list"], ws.child("event_list"));
      const auto& known = event_list_names();
      if (std::find(known.begin(), known.end(), s.event_list) == known.end()) {
        fail(ws.child("event_list"), sim["event_list"], "expected radix, quad, heap or set");
      }
    }
    parse_cancellation(sim, ws, s);
  }
  s.cluster = parse_cluster(root["cluster"], w.child("cluster"));
  if (seed) s.seed = *seed;

  if (!root["workload"]) fail(w, root, "missing 'workload' (see docs/workloads.md)");
  try {
    c.workload = workloads::parse_workload(root["workload"], uint32_t(s.models.size()));
  } catch (const std::invalid_argument& e) {
    throw ConfigError((file.empty() ? "" : file + ": ") + e.what());
  }
  c.workload.access.trace_file = resolve_path(c.workload.access.trace_file, base_dir);
  c.workload.arrival.trace_file = resolve_path(c.workload.arrival.trace_file, base_dir);
  if (seed) {
    c.workload.access.seed = *seed;
    c.workload.arrival.seed = *seed + 1;
  }

  // The effective config: every default written out.
  YAML::Node r;
  r["name"] = c.name;
  for (size_t i = 0; i < models.size(); ++i) {
    YAML::Node m;
    m["name"] = models[i].name;
    m["profile_model"] = models[i].profile_model;
    m["contexts"] = s.models[i].contexts;
    m["max_batch"] = s.models[i].max_batch ? s.models[i].max_batch : s.control.max_batch;
    r["models"].push_back(m);
  }
  r["profile"] = fs::absolute(c.profile_path).lexically_normal().string();
  config::emit_engine_section(c.engine, r);
  r["workload"] = YAML::Load(workloads::to_yaml(c.workload))["workload"];
  YAML::Node sn;
  sn["noise"] = cost_noise_name(s.noise);
  sn["seed"] = s.seed;
  sn["preload"] = s.preload_tier == Tier::Disk ? "none" : tier_name(s.preload_tier);
  if (std::isinf(s.max_time)) sn["max_time_s"] = "none";
  else sn["max_time_s"] = s.max_time;
  sn["event_list"] = s.event_list;
  sn["io_threads"] = s.io_threads;
  sn["cost_scale"] = cost_scale;
  if (!s.speed_trace.empty()) sn["speed_trace"] = speed_trace_yaml(s.speed_trace);
  if (s.client_timeout < kNever) sn["client_timeout_s"] = s.client_timeout;
  sn["cancel_delay_s"] = s.cancel_delay;
  if (s.jitter >= 0) sn["jitter"] = s.jitter;
  r["simulation"] = sn;
  r["cluster"]["servers"] = s.cluster.servers;
  r["cluster"]["router"] = config::emit_policy(s.cluster.router);
  c.resolved = r;
  return c;
}

YAML::Node speed_trace_yaml(const std::vector<SimulationSetup::SpeedWindow>& trace) {
  YAML::Node t;
  for (const auto& w : trace) {
    YAML::Node pair;
    pair.push_back(w.from);
    pair.push_back(w.factor);
    pair.SetStyle(YAML::EmitterStyle::Flow);
    t.push_back(pair);
  }
  return t;
}

SimConfig load_sim_config(const std::string& path, const std::vector<std::string>& overrides,
                          std::optional<uint64_t> seed) {
  YAML::Node root = config::load_file(path);
  if (root.IsMap() && root["sim"]) {
    config::merge_into(root, root["sim"]);
    root.remove("sim");
  }
  for (const std::string& o : overrides) config::apply_override(root, o);
  std::string base = fs::path(path).parent_path().string();
  return parse_sim_config(root, path, base.empty() ? "." : base, seed);
}

}  // namespace servelab::sim
