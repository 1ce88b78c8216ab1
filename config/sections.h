// The simulator's sections of a run configuration as plain values: `simulation:` and
// `cluster:` (schema: docs/config.md). config/ parses and checks their form; the simulator turns
// them into its SimulationSetup (simulator/sim_config.h) and checks the names that only it
// knows (routers, event lists). No YAML here; value types, thread-compatible.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "calibration/terms/speed_trace.h"
#include "engine/control/cost_profile.h"
#include "engine/control/policy_params.h"
#include "engine/control/types.h"

namespace servelab::config {

// One window of simulation.speed_trace (calibration/terms/speed_trace.h).
using SpeedWindow = servelab::SpeedWindow;

// `cluster:` N servers, each with the whole engine, which servers host which models (the
// placement), and the router that picks one of a model's hosts per request. The names and
// parameters are engine/route's to check (router.h, placement.h).
struct ClusterSection {
  uint32_t servers = 1;
  PolicySpec router{"round-robin", {}};
  PolicySpec placement{"everywhere", {}};
  // Backup requests (DLIS, "The Tail at Scale"): a request not answered this long after it
  // was sent goes a second time to another host of its model; kNever: none.
  double backup_after = std::numeric_limits<double>::infinity();
  // Or a delay that follows the model: this percentile (0 < p <= 100) of the latencies of
  // its answered requests so far (DLIS: the 95th); NaN: none. At most one of the two is set.
  double backup_percentile = std::numeric_limits<double>::quiet_NaN();
  // Whether backups are on (either delay set).
  bool backups() const { return backup_after < kNever || !std::isnan(backup_percentile); }
  // With backups: the server that dequeues a copy first has the other copy cancelled
  // (simulation.cancel_delay_s later): queued, it is removed; running, its result discarded.
  bool cancel_copies = true;
  // The real cluster's front end (docs/cluster.md): `servelab` (servelab route, in-process,
  // with `router`), or Debian's `nginx` (least_conn) or `haproxy` (leastconn) as a child
  // process. Those two balance by least outstanding requests, so the parser makes `router`
  // least-outstanding for them (the simulator then simulates what they do) and refuses a
  // placement other than everywhere and backups, which they do not have.
  std::string front = "servelab";
  // The cores of the one machine the servers run on, shared by their workers' batches
  // (simulator/shared_cores.h); 0: every worker has a core of its own. The simulator's alone:
  // a real cluster runs on the machine it runs on. `cores: machine` in YAML is this
  // machine's (std::thread::hardware_concurrency, resolved when the config is read).
  uint32_t cores = 0;
};

// `simulation.machine`: the simulated machine (calibration/terms/machine_model.h) named as a
// whole: `profile` (the default) applies every term the profile measured, `costs-only` the
// profile's batch and load costs alone, and {without: [TERM, ...]} every term but those.
struct MachineSection {
  // The measured speed course (the profile's speed_drift), where it has one.
  bool speed_drift = true;
  // A batch after its worker idled costs the profile's measured factor more.
  bool idle_slowdown = true;
  // A batch costs the model's measured served extra more.
  bool served_extra = true;
  // A miss served one request at a time costs the served load wait and first batch.
  bool served_miss = true;
  // A request that finds its server idle takes the model's measured idle extra longer.
  bool idle_intake = true;

  static const std::vector<std::string>& term_names();  // in the order above
  bool* term(const std::string& name);                  // null for an unknown name
  bool all() const {
    return speed_drift && idle_slowdown && served_extra && served_miss && idle_intake;
  }
  bool none() const {
    return !speed_drift && !idle_slowdown && !served_extra && !served_miss && !idle_intake;
  }
};

// `simulation:` (the simulator's own knobs; the engine ignores them).
struct SimulationSection {
  CostNoise noise = CostNoise::None;
  uint64_t seed = 1;
  Tier preload = Tier::Device;  // Tier::Disk: preload none
  // Where Disk -> Host loads read the model from (engine/control/load_sources.h): `file` is
  // the profile's load_ms; another source takes the profile's load_sources_ms entry.
  LoadSource load_source = LoadSource::File;
  Time max_time = kNever;
  std::string event_list = "radix";  // a name of simulator/event_list.h, checked there
  uint32_t io_threads = 2;
  double cost_scale = 1;
  std::vector<SpeedWindow> speed_trace;
  double jitter = -1;  // < 0: the profile's own noise
  MachineSection machine;
  Time client_timeout = kNever;
  Time cancel_delay = 0;
  // Bound the executing tier's offline optimum on each server's access sequence (summary
  // "cache_optimum"), where that tier is limited.
  bool cache_optimum = true;
};

}  // namespace servelab::config
