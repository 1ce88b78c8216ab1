#include "simulator/sim_config.h"

#include <algorithm>
#include <exception>
#include <string>

#include "config/profile_yaml.h"
#include "config/yaml_util.h"
#include "engine/control/private_weights.h"
#include "simulator/event_list.h"
#include "simulator/cluster_placement.h"
#include "engine/route/router.h"

namespace servelab::sim {

namespace {

const ModelProfile& profile_entry(const CostProfile& profile, const config::RunConfig& run,
                                  const config::ModelEntry& m) {
  if (const ModelProfile* p = profile.find(m.profile_model)) return *p;
  std::string known;
  for (const auto& n : profile.names()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError((run.file.empty() ? "" : run.file + ": ") + "models: model '" + m.name +
                    "' uses profile entry '" + m.profile_model + "', which " + run.profile +
                    " does not have (it has: " + known + ")");
}

// simulation.cost_scale: every cost drawn from the profile, overheads and bursts included.
void scale_costs(SimulationSetup& s, double scale) {
  if (scale == 1) return;
  for (SimModel& m : s.models) {
    m.profile.scale_costs(scale);
    m.overhead.scale(scale);
  }
  scale_cold_bursts(s.cold_bursts, scale);
}

void copy_simulation_section(const config::SimulationSection& in, SimulationSetup& s) {
  s.noise = in.noise;
  s.seed = in.seed;
  s.preload_tier = in.preload;
  s.max_time = in.max_time;
  s.event_list = in.event_list;
  s.io_threads = in.io_threads;
  s.speed_trace = in.speed_trace;
  s.jitter = in.jitter;
  s.client_timeout = in.client_timeout;
  s.cancel_delay = in.cancel_delay;
  s.cache_optimum = in.cache_optimum;
}

// simulation.load_source: every model's Disk -> Host load as measured from that source.
void use_load_source(SimulationSetup& s, LoadSource source) {
  if (source == LoadSource::File) return;  // the profile's load_ms as it stands
  for (SimModel& m : s.models) m.profile.use_load_source(source);
}

// engine.weights: private costs each batch its own load; the controller's tiers must then
// hold every model from the start, so that it never loads or evicts one itself.
void check_private_loads(const SimulationSetup& s) {
  if (!s.private_loads) return;
  check_private_weights_tiers(s.control);
  if (s.preload_tier < s.control.exec_tier)
    throw ConfigError(std::string("simulation.preload: with private weights it must reach the "
                                  "executing tier (") + tier_name(s.control.exec_tier) + ")");
}

// The way into a group is one request for all its members: their largest overheads.
RequestOverhead group_overhead(const std::vector<SimModel>& models, const std::vector<ModelId>& members) {
  RequestOverhead o;
  for (ModelId m : members) {
    const RequestOverhead& x = models[m].overhead;
    o.before = std::max(o.before, x.before);
    o.after = std::max(o.after, x.after);
    o.preprocess = std::max(o.preprocess, x.preprocess);
    o.client = std::max(o.client, x.client);
    o.stddev = std::max(o.stddev, x.stddev);
  }
  return o;
}

ModelId model_index(const config::RunConfig& run, const std::string& name) {
  for (size_t i = 0; i < run.models.size(); ++i)
    if (run.models[i].name == name) return ModelId(i);
  throw ConfigError("group member '" + name + "' is not in models");  // parse_run_config checks
}

// After scaling: a group's way in is taken from its members' scaled overheads.
void add_groups(const config::RunConfig& run, SimulationSetup& s) {
  for (const config::GroupEntry& g : run.groups) {
    SimGroup sg{g.name, {}, g.subset, g.dispatch, g.accuracy, {}};
    for (const std::string& m : g.members) sg.members.push_back(model_index(run, m));
    sg.overhead = group_overhead(s.models, sg.members);
    s.groups.push_back(std::move(sg));
  }
  for (size_t i = 0; i < run.models.size(); ++i) s.models[i].accuracy = run.accuracy_of(run.models[i].name);
}

// Rethrows a check's error (ConfigError, or invalid_argument from the event lists) as a
// ConfigError with the file and the key it is about.
template <typename Check>
void check_key(const config::RunConfig& run, const std::string& key, Check check) {
  try {
    check();
  } catch (const std::exception& e) {
    throw ConfigError((run.file.empty() ? "" : run.file + ": ") + key + ": " + e.what());
  }
}

}  // namespace

void check_simulator_names(const config::RunConfig& run) {
  check_key(run, "simulation.event_list", [&] { make_event_list(run.simulation.event_list); });
  check_key(run, "cluster.router", [&] { route::make_router(run.cluster.router, 1); });
}

SimulationSetup build_setup(const config::RunConfig& run) {
  check_simulator_names(run);
  const config::ProfileFile file = config::load_profile_file(run.profile);
  SimulationSetup s;
  s.control = run.engine.control;
  s.slo = run.engine.slo;
  for (const config::ModelEntry& m : run.models) {
    const RequestOverhead* o = file.front_end.overhead(m.profile_model);
    s.models.push_back({m.name, profile_entry(file.costs, run, m), run.contexts_of(m), m.max_batch,
                        o ? *o : RequestOverhead{}});
    s.models.back().slo = m.slo;
    RequestOverhead& overhead = s.models.back().overhead;
    if (!run.simulation.machine.served_extra) overhead.served_extra = 0;
    if (!run.simulation.machine.served_miss) overhead.served_miss_load = overhead.served_miss_batch = 0;
    if (!run.simulation.machine.idle_intake) overhead.idle_extra = 0;
  }
  s.cold_bursts = file.front_end.cold_bursts;
  copy_simulation_section(run.simulation, s);
  if (run.simulation.machine.speed_drift) s.speed_drift = file.speed_drift;
  if (run.simulation.machine.idle_slowdown) s.idle_slowdown = file.idle_slowdown;
  s.private_loads = run.engine.private_weights;
  check_key(run, "engine.weights", [&] { check_private_loads(s); });
  check_key(run, "simulation.load_source",
            [&] { use_load_source(s, run.simulation.load_source); });
  scale_costs(s, run.simulation.cost_scale);
  add_groups(run, s);
  s.cluster = run.cluster;
  check_key(run, "cluster.placement", [&] { check_placement(s); });
  return s;
}

SimConfig make_sim_config(config::RunConfig run) {
  SimConfig c;
  c.setup = build_setup(run);
  c.resolved = config::emit_run_config(run);
  c.run = std::move(run);
  return c;
}

SimConfig load_sim_config(const std::string& path, const std::vector<std::string>& overrides,
                          std::optional<uint64_t> seed) {
  return make_sim_config(config::load_run_config(path, overrides, seed));
}

SimConfig parse_sim_config(const YAML::Node& root, const std::string& file,
                           const std::string& base_dir, std::optional<uint64_t> seed) {
  return make_sim_config(config::parse_run_config(root, file, base_dir, seed));
}

}  // namespace servelab::sim
