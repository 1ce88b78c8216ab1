// The serving simulator: runs the Controller (engine/control/controller.h) exactly as the
// engine does, with simulated workers, loader and clients in virtual time. A dispatch of b
// requests of model m finishes at now + cost(m, b) from the model's cost profile (a draw
// from the measured distribution when noise is on, from the simulation's own seeded RNG);
// a load finishes at now + load time(m, from, to); evictions complete immediately.
// Clients follow a generated workloads::Workload: closed loop (N in flight, the next request
// sent at a completion plus its think time) or open loop (send_times). A profile's request
// overheads (ModelProfile::overhead_before/after) delay each arrival at the controller and
// each answer at the client, so records hold client-side times as the load generator's do.
// simulate() keeps all state in locals: concurrent calls from different threads are safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/control/controller.h"
#include "engine/control/cost_profile.h"
#include "results/records.h"
#include "workloads/workload.h"

namespace servelab::sim {

// One simulated model: ModelId is its index in SimulationSetup::models.
struct SimModel {
  std::string name;
  ModelProfile profile;       // its costs (profile.name may differ: profile_model)
  uint32_t contexts = 1;
  uint32_t max_batch = 0;     // 0: the controller's max_batch
};

struct SimulationSetup {
  ControllerConfig control;
  std::vector<SimModel> models;
  std::optional<Time> slo;       // sets each request's deadline = arrival + slo
  CostNoise noise = CostNoise::None;
  uint64_t seed = 1;             // the executor's RNG stream (batch latency noise)
  // Before the run, models are made resident in model order as far as tier budgets allow:
  // every tier up to `preload_tier` (Rafiqi initializes all models into RAM and leaves as
  // many as fit cached on the GPU). Tier::Disk preloads nothing (a cold start).
  Tier preload_tier = Tier::Device;
  Time max_time = kNever;        // stop the run at this virtual time (requests then lost)
  // Stop when no request finished for this long while only timers fired (a stuck policy).
  Time stall_timeout = 3600;
  std::string event_list = "heap";  // heap | set (see event_list.h)
  // The server's IO threads (HTTP server default 2): each request's preprocessing overhead
  // (ModelProfile::overhead_preprocess) holds one, first come first served.
  uint32_t io_threads = 2;
  // The machine's speed over time (simulation.speed_trace): from `from` on, batch and load
  // costs drawn from the profile are multiplied by `factor`, until the next entry's `from`.
  // Sorted by `from`; empty: constant speed. --match-speed fills it from a real run.
  struct SpeedWindow {
    Time from = 0;
    double factor = 1;
  };
  std::vector<SpeedWindow> speed_trace;
  double speed_at(Time t) const;  // sim::speed_at(speed_trace, t)
  // simulation.jitter: >= 0 replaces the profile's batch noise (with noise on) by a normal of
  // this relative standard deviation around the mean (--match-speed: the real run's
  // pass-to-pass spread within its speed windows). < 0: the profile's own noise.
  double jitter = -1;
};

// The factor of `trace` at time t: its last window starting at or before t (1 before the
// first).
double speed_at(const std::vector<SimulationSetup::SpeedWindow>& trace, Time t);

struct SimulationResult {
  results::RunRecords records;    // one record per workload request, indexed by request id
  uint64_t events = 0;            // events processed
  uint64_t timers = 0;            // controller timer calls
  uint64_t lost = 0;              // requests never completed (stall or max_time)
  Time end_time = 0;              // virtual time of the last event
  // Contract violations the simulated executor observed (dispatch of a model not resident,
  // eviction of a model in use, duplicate completion, too many loads in flight, ...).
  // Empty for a correct controller.
  std::vector<std::string> violations;
};

// Runs one simulation. Throws ConfigError for a bad setup (unknown policy, a model that has
// no load time for a load the controller asks for).
SimulationResult simulate(const SimulationSetup& setup, const workloads::Workload& workload);

}  // namespace servelab::sim
