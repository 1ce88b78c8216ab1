// What serving costs a batch beyond its back-to-back cost, measured on the served path (the
// in-process server and load generator, as real mode runs them) against batches back to
// back on an executor of the same device and threads, in alternating turns so that both see
// the machine's drift alike; and what a miss costs when served one at a time. No LibTorch
// includes here.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/runtime/engine.h"
#include "calibration/profiler.h"
#include "calibration/terms/front_end_profile.h"
#include "calibration/terms/idle_slowdown.h"

namespace servelab::experiments {

// How much longer a served batch of 1 computes than one back to back (RequestOverhead::
// served_extra): `rounds` turns of `per_round` batches served at a few requests in flight
// against the in-process server running `spec` with `eo` (as measure_model_overhead), each
// followed by as many back to back. None (no turns) when rounds or per_round is 0.
struct ServedExtra {
  std::vector<double> served, alone;  // per turn: mean compute served, then back to back (s)
  // The fastest served turn less the fastest back-to-back one, at least 0 (seconds). The
  // machine flips between speed states for seconds at a time, which a turn's difference
  // carries whole (a median of differences can swing far more than the effect itself); each
  // side's fastest turn is in the same, fast, state.
  double extra() const;
};
ServedExtra measure_served_extra(const runtime::EngineOptions& eo,
                                 const runtime::ModelSpec& spec, const std::string& image,
                                 uint32_t rounds, uint32_t per_round);

// A worker that serves one request at a time, sustained: `turns` turns of `per_turn`
// requests of a closed loop of one client against the in-process server running `spec` with
// `eo` (batches of 1; in quantum mode the worker idles each round trip until the next tick),
// each then followed by back-to-back batches for as long as the turn took.
struct ServedIdle {
  struct Turn {
    double served = 0;  // mean compute of a served batch
    double alone = 0;   // mean cost of a batch back to back, after it
    double gap = 0;     // mean time the worker idled between served batches
    double factor() const { return served / alone; }
  };
  std::vector<Turn> turns;
  double gap = 0;     // the mean of the turns' gaps
  double factor = 1;  // the median of the turns' factors
  double served = 0;  // the median of the turns' served batches
};
// None (no factors) when turns is 0 or per_turn below 2. Throws std::runtime_error when a
// request fails or is batched with another.
ServedIdle measure_served_idle(const runtime::EngineOptions& eo, const runtime::ModelSpec& spec,
                               const std::string& image, uint32_t turns, uint32_t per_turn);

// Misses served one at a time: a closed loop of one client alternating between two copies
// of `spec` against the in-process server running `eo` with room for one model in the
// executing tier, so that every request evicts the other copy and loads its own (as Rafiqi
// figure 2's sequential access), `n` answers after the loop's opening. Means over them.
struct ServedMiss {
  double load = 0;   // its batch's wait for the eviction and the load (the engine's load_ms)
  double batch = 0;  // the compute of that batch, the first on the fresh module
  uint32_t misses = 0;
  std::vector<double> loads;  // each miss's wait, in order
};
// Throws std::runtime_error when a request fails, is batched with another or did not wait
// for a load.
ServedMiss measure_served_miss(const runtime::EngineOptions& eo, const runtime::ModelSpec& spec,
                               const std::string& image, uint32_t n);

// The profiler's use of them, for a model whose batch of 1 costs `batch_of_one` seconds:
// the served extra in turns of about o.served_turn_seconds (0 when o.served_rounds is 0) ...
double served_extra_of(const ProfileOptions& o, const runtime::EngineOptions& eo,
                       const runtime::ModelSpec& spec, double batch_of_one,
                       const std::string& image,
                       const std::function<void(const std::string&)>& log);
// ... and the served idle slowdown as the profile's idle_slowdown: a point at the served
// loop's mean gap (at least 0.1 ms) with the engine ticking every o.served_idle_quantum, and
// before it one at the event-driven loop's shorter gap (a round trip; where o.served_idle_
// quantum is above 0 and that gap is shorter), each in turns of about
// o.served_idle_turn_seconds (none when o.served_idle_turns is 0); the ticked loop's served
// batch itself into `overhead` (served_idle_batch).
IdleSlowdown served_idle_of(const ProfileOptions& o, const runtime::ModelSpec& spec,
                            double batch_of_one, const std::string& image,
                            RequestOverhead& overhead,
                            const std::function<void(const std::string&)>& log);
// ... and its served misses (o.served_miss_requests of them, the engine ticking every
// o.served_idle_quantum) into `overhead` (served_miss_load, served_miss_batch; left as they
// are when o.served_miss_requests is 0).
void served_miss_of(const ProfileOptions& o, const runtime::ModelSpec& spec,
                    const std::string& image, RequestOverhead& overhead,
                    const std::function<void(const std::string&)>& log);

}  // namespace servelab::experiments
