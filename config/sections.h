// The simulator's sections of a run configuration as plain values: `simulation:` and
// `cluster:` (schema: docs/config.md). config/ parses and checks their form; the simulator turns
// them into its SimulationSetup (simulator/sim_config.h) and checks the names that only it
// knows (routers, event lists). No YAML here; value types, thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "calibration/terms/speed_trace.h"
#include "engine/control/cost_profile.h"
#include "engine/control/policy_params.h"
#include "engine/control/types.h"

namespace servelab::config {

// One window of simulation.speed_trace (calibration/terms/speed_trace.h).
using SpeedWindow = servelab::SpeedWindow;

// `cluster:` N servers, each with the whole engine, and the router that picks one per request.
// The router's name and parameters are the simulator's to check (simulator/router.h).
struct ClusterSection {
  uint32_t servers = 1;
  PolicySpec router{"round-robin", {}};
};

// `simulation:` (the simulator's own knobs; the engine ignores them).
struct SimulationSection {
  CostNoise noise = CostNoise::None;
  uint64_t seed = 1;
  Tier preload = Tier::Device;  // Tier::Disk: preload none
  Time max_time = kNever;
  std::string event_list = "radix";  // a name of simulator/event_list.h, checked there
  uint32_t io_threads = 2;
  double cost_scale = 1;
  std::vector<SpeedWindow> speed_trace;
  double jitter = -1;  // < 0: the profile's own noise
  // speed_drift: profile (the profile's measured speed course, where it has one) | off.
  bool speed_drift = true;
  // idle_slowdown: profile (a batch after its worker idled costs the profile's measured
  // factor more, where it has one) | off.
  bool idle_slowdown = true;
  // served_extra: profile (a batch costs the profile's measured served extra more, where its
  // request overhead has one) | off.
  bool served_extra = true;
  // served_miss: profile (a miss served one request at a time costs the load wait and first
  // batch the profile measured on the served path, where its request overhead has them) | off.
  bool served_miss = true;
  Time client_timeout = kNever;
  Time cancel_delay = 0;
};

}  // namespace servelab::config
