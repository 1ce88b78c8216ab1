// The simulated machine: what a batch, a load and an eviction cost on one simulated server,
// drawn from the cost profile and the terms fitted to this machine. The simulated server
// consults it and nothing else for costs; every fitted term enters here:
//   - the profile's batch and load costs, with their noise (CostNoise) or a real run's jitter;
//   - the speed trace (a real run's speed over time: --match-speed) or, without one, the
//     machine's speed course (speed_course.h: consecutive batches cost alike);
//   - the slowdown after a worker idled (idle_slowdown.h) and the measured served batch after
//     idling (RequestOverhead::served_idle_batch);
//   - the served extra of a batch over back to back (RequestOverhead::served_extra);
//   - a miss served from an empty server (RequestOverhead::served_miss_load/_batch).
// A speed trace or jitter stands for a real run's own speeds, so the profile's speed terms
// (course, idle slowdown, served extra and misses) are then left out. Each term's header says
// how it is measured (calibration/: the profiler and its probes). One per simulated server,
// with its own random streams; one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "calibration/terms/front_end_profile.h"
#include "calibration/terms/idle_slowdown.h"
#include "calibration/terms/speed_course.h"
#include "calibration/terms/speed_trace.h"
#include "engine/control/controller.h"
#include "engine/control/cost_profile.h"

namespace servelab {

// What a MachineModel draws from, borrowed (it must outlive the model): per model, its cost
// profile and its request overhead (the served terms), plus the run-wide terms.
struct MachineTerms {
  std::vector<const ModelProfile*> profiles;     // by model
  std::vector<const RequestOverhead*> overheads;  // by model
  CostNoise noise = CostNoise::None;
  double jitter = -1;                             // >= 0: a real run's relative spread
  const std::vector<SpeedWindow>* speed_trace = nullptr;  // null or empty: constant speed
  const SpeedDrift* speed_drift = nullptr;        // null or off: none
  const IdleSlowdown* idle_slowdown = nullptr;    // null or no points: none
  Tier exec_tier = Tier::Host;                    // where a miss loads to
};

// Per model: what every server's draws read.
struct ModelTerms {
  const ModelProfile* profile = nullptr;
  const RequestOverhead* overhead = nullptr;
  bool served_miss = false;        // the overhead measured a served miss (its load and batch)
  double served_idle_ratio = 0;    // served idle batch / the profile's batch of 1 (0: none)
  double served_sample_scale = 0;  // served miss mean / its samples' mean (0: no samples)
};

// The terms and the per-model constants derived from them, built once for a run and shared,
// read-only, by its servers' models: N servers read one copy of a model's terms, which stays
// in cache from one server's request to the next's.
struct MachineTables {
  explicit MachineTables(MachineTerms terms);
  MachineTerms terms;
  std::vector<ModelTerms> models;  // by model
};

class MachineModel {
 public:
  // `seed`: the server's; its batch, load and course streams derive from it.
  MachineModel(const MachineTerms& terms, uint64_t seed)
      : MachineModel(std::make_shared<const MachineTables>(terms), seed) {}
  // The same on tables other servers of the run share.
  MachineModel(std::shared_ptr<const MachineTables> tables, uint64_t seed);

  // A batch of `size` requests of `model` that starts at `now` on a worker idle since
  // `idle_since`; `emptied_while_idle`: the server held no request at some moment since then
  // (serving one request at a time), which is when the idle slowdown applies.
  Time batch_cost(ModelId model, uint32_t size, Time now, Time idle_since,
                  bool emptied_while_idle);
  // An eviction of `model` from `tier` at `now` (the loader's time for it; 0: free).
  Time evict_cost(ModelId model, Tier tier, Time now) const;
  // A load that was posted at `now` and starts on the loader at `start`; `from_empty`: the
  // server held no request since the loader last idled (a miss served one at a time).
  Time load_cost(const LoadAction& l, Time now, Time start, bool from_empty);

  double speed_at(Time t) const;  // the speed trace's factor at t (1 without one)

 private:
  Time profile_batch_cost(ModelId model, uint32_t size, Time now);
  double idle_factor(ModelId model, Time idle) const;
  Time served_wait(const LoadAction& l, Time draw);

  std::shared_ptr<const MachineTables> tables_;  // shared with the run's other servers
  std::mt19937_64 rng_;       // batch latency draws
  std::mt19937_64 load_rng_;  // load time draws (own stream: profiles without load samples
                              // keep their batch draws as they were)
  // The machine's speed course, where the profile measured one and no real run's speeds
  // replace it: batch costs are drawn at its scores instead of from rng_.
  std::optional<SpeedCourse> course_;
  const IdleSlowdown* idle_slowdown_ = nullptr;  // applies (profile's speeds, points measured)
  bool served_terms_ = false;                    // the served extra and misses apply
  std::vector<uint8_t> served_miss_next_;        // per model: next batch follows a served miss
};

}  // namespace servelab
