// The serving simulator: runs the Controller (engine/control/controller.h) exactly as the
// engine does, in virtual time, as a system of parts (docs/architecture.md): clients (closed
// loop, open loop, trace replay) send requests through a router to one of N servers; each
// server's front end models the way in (network, parsing, IO threads: the models' request
// overheads) and out; each server runs a controller with simulated workers, loader and tiers
// on the models' cost profiles. One server is the default.
// simulate() keeps all state in locals: concurrent calls from different threads are safe.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "config/sections.h"
#include "engine/control/controller.h"
#include "engine/control/cost_profile.h"
#include "engine/control/ensemble.h"
#include "calibration/terms/front_end_profile.h"
#include "calibration/terms/idle_slowdown.h"
#include "calibration/terms/speed_course.h"
#include "results/records.h"
#include "workloads/workload.h"
#include "workloads/workload_stream.h"

namespace servelab::sim {

// One simulated model: ModelId is its index in SimulationSetup::models.
struct SimModel {
  std::string name;
  ModelProfile profile;       // its costs (profile.name may differ: profile_model)
  uint32_t contexts = 1;
  uint32_t max_batch = 0;     // 0: the controller's max_batch
  // Its request overhead (front-end profile, by profile entry); zero when the profile has none.
  // Its served_extra is added to each of its batches' cost (zeroed by simulation.served_extra:
  // off), its served_miss_load/batch cost a miss served one at a time (simulator/server.h;
  // zeroed by simulation.served_miss: off); both unused with a speed trace or jitter, whose
  // real run's speeds hold them already.
  RequestOverhead overhead;
  // Its measured accuracy (a group's table lists it alone): a request's record carries it.
  // NaN: unknown.
  double accuracy = std::numeric_limits<double>::quiet_NaN();
  // Its own latency objective (models[].slo_ms): requests to it get deadline arrival + slo.
  // None: SimulationSetup::slo.
  std::optional<Time> slo = std::nullopt;
};

// A model group (ensemble): a request to it fans out at the front end into one sub-request
// per member its subset policy selects, each an ordinary request in its member's queue
// (group_requests.h says how their ids are made and how the answers combine).
struct SimGroup {
  std::string name;
  std::vector<ModelId> members;  // indices into SimulationSetup::models, at most 8
  PolicySpec subset{"all", {}};  // engine/control/ensemble.h
  // An ensemble dispatcher (engine/control/ensemble_dispatch.h) instead of per-request
  // subsets: the group queues its requests and the dispatcher releases batches to subsets.
  // An empty name: none.
  PolicySpec dispatch{"", {}};
  EnsembleAccuracy accuracy;     // of the members that voted, by member mask
  // The way in is taken once for all members (one HTTP request, one decode): the members'
  // largest overheads. The way out is each member's own.
  RequestOverhead overhead;
};

struct SimulationSetup {
  ControllerConfig control;
  std::vector<SimModel> models;
  // Workload index models.size() + g addresses groups[g]. Empty: the simulator as it was.
  std::vector<SimGroup> groups;
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
  std::string event_list = "radix";  // radix | quad | heap | set (see event_list.h)
  // The server's IO threads (HTTP server default 2): each request's preprocessing overhead
  // (RequestOverhead::preprocess) holds one, first come first served.
  uint32_t io_threads = 2;
  // The profile's measured cold bursts (FrontEndProfile::cold_bursts): a closed loop whose
  // clients start together on one server opens with one of them. Empty: none replayed.
  ColdBursts cold_bursts;
  // The machine's speed over time (simulation.speed_trace): from `from` on, batch and load
  // costs drawn from the profile are multiplied by `factor`, until the next entry's `from`.
  // Sorted by `from`; empty: constant speed. --match-speed fills it from a real run.
  using SpeedWindow = config::SpeedWindow;
  std::vector<SpeedWindow> speed_trace;
  double speed_at(Time t) const;  // sim::speed_at(speed_trace, t)
  // simulation.jitter: >= 0 replaces the profile's batch noise (with noise on) by a normal of
  // this relative standard deviation around the mean (--match-speed: the real run's
  // pass-to-pass spread within its speed windows). < 0: the profile's own noise.
  double jitter = -1;
  // The machine's speed course (calibration/terms/speed_course.h): each server draws its batches'
  // costs (with noise on) at its course's score instead of independently. From the profile
  // (simulation.speed_drift: profile, the default); off with a speed trace or jitter, which
  // give a real run's own course. share 0: none.
  SpeedDrift speed_drift{};
  // The machine's slowdown after idling (calibration/terms/idle_slowdown.h): a batch that starts after
  // its worker idled costs factor_after(idle time) times its draw. From the profile
  // (simulation.idle_slowdown: profile, the default); off with a speed trace or jitter, whose
  // real run's speeds hold it already. No points: none.
  IdleSlowdown idle_slowdown{};
  // simulation.cluster: N servers, each with the whole engine above (its own controller,
  // workers, tiers and IO threads), and the router (engine/route/router.h) that picks one per request.
  using Cluster = config::ClusterSection;
  Cluster cluster;
  // simulation.client_timeout_s: a client that has no answer this long after sending gives
  // up (the request's status is cancelled, its finish the give-up time; a closed loop sends
  // its next request then) and sends a cancellation that reaches the server cancel_delay
  // later: a request still queued there is removed, a running one's result is discarded.
  Time client_timeout = kNever;
  Time cancel_delay = 0;
  // engine.weights: private: no copy of a model serves two batches (FaaS without a model
  // store, TrIMS's baseline). Each batch first loads its model's own copy from disk to the
  // executing tier on the server's loader (FIFO, after the loads posted before it), then
  // computes; the copy is gone at the batch's end. The tiers then hold nothing the
  // controller must load (build_setup requires them unbounded and preloaded).
  bool private_loads = false;
  // simulation.cache_optimum: each server whose executing tier is limited records the models
  // of the batches it runs, in order, and the run bounds the fewest loads any eviction policy
  // could have made there (results/offline_cache.h; RunRecords::cache_optimum).
  bool cache_optimum = true;
};

// The names a run's records use for the workload's indices: the models, then the groups.
std::vector<std::string> target_names(const SimulationSetup& setup);

// The factor of `trace` at time t: its last window starting at or before t (1 before the
// first).
double speed_at(const std::vector<SimulationSetup::SpeedWindow>& trace, Time t);

struct SimulationResult {
  // One record per workload request, indexed by request id; from the streaming simulate(),
  // everything but the requests (they went to the sink).
  results::RunRecords records;
  uint64_t events = 0;            // events processed
  uint64_t timers = 0;            // controller timer calls
  uint64_t lost = 0;              // requests never completed (stall or max_time)
  Time end_time = 0;              // virtual time of the last event
  // Backup requests (cluster.backup_after_s): copies sent, copies cancelled by the other's
  // dequeue, losing copies that ran anyway and the server time they took.
  uint64_t backups_sent = 0, copies_cancelled = 0, copies_wasted = 0;
  Time wasted_seconds = 0;
  // cluster.placement's hosts of each model (by model index, servers ascending) where some
  // model is not on every server; empty where every model is everywhere.
  std::vector<std::vector<uint32_t>> hosts;
  // Each server's share of the run, by server index, where the cluster has more than one
  // (empty for one server): the requests that reached its controller (backup copies and
  // group members included), the batches it ran and the seconds its workers computed them.
  struct ServerShare {
    uint64_t requests = 0, batches = 0;
    Time compute_seconds = 0;
  };
  std::vector<ServerShare> servers;
  // Contract violations the simulated executor observed (dispatch of a model not resident,
  // eviction of a model in use, duplicate completion, too many loads in flight, ...).
  // Empty for a correct controller.
  std::vector<std::string> violations;
};

// Runs one simulation. Throws ConfigError for a bad setup (unknown policy, a model that has
// no load time for a load the controller asks for).
SimulationResult simulate(const SimulationSetup& setup, const workloads::Workload& workload);

// The same run, its records handed to `sink` in id order as they become final instead of
// kept (memory follows the requests in flight, not the run's length). Records are final when
// the client has its answer or gave up; requests never finished follow at the end.
SimulationResult simulate(const SimulationSetup& setup, const workloads::Workload& workload,
                          results::RecordSink& sink);

// The same run on a workload stream: each request is drawn as the clients reach it, so that
// memory follows the requests in play, not the run's length. Throws std::invalid_argument
// where the stream does (a schedule over the request cap).
SimulationResult simulate(const SimulationSetup& setup, workloads::WorkloadStream& workload,
                          results::RecordSink& sink);

// Either of the above, on any schedule (schedule.h).
class Schedule;
SimulationResult simulate(const SimulationSetup& setup, Schedule& schedule,
                          results::RecordSink& sink);

}  // namespace servelab::sim
