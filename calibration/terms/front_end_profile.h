// The front-end and measurement profile: what a client of the real engine sees outside the
// batch (per-model request overheads) and how a closed loop's opening burst reaches the
// controller (cold bursts measured on the profiler's probe). Machine-fitting terms owned by
// the simulator (simulator/front_end.h, clients.h) and the profiler (calibration/profiler.h);
// engine/control's cost profile keeps batch and load costs only. Plain data, no I/O (YAML:
// config/profile_yaml.h). Sampling methods use the RNG the caller passes.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/control/cost_profile.h"

namespace servelab {

// Per-request cost outside the batch, as a client of the real engine sees it (seconds), per
// model. 0 in paper profiles (they report server-side latency); `servelab measure` measures it.
// A profile keeps at most this many served-miss samples per model (the profiler's and every
// calibration probe's of a long check fit).
constexpr size_t kMaxServedMissSamples = 65536;

struct RequestOverhead {
  // From the client's send until the controller sees the arrival (HTTP request, image decode
  // and preprocessing on the IO thread, hand-off to the control thread).
  double before = 0;
  // From the batch's end until the client has the response.
  double after = 0;
  // The part of `before` that occupies one of the server's IO threads (decode and
  // preprocessing): a burst of requests queues for them, so its arrivals reach the
  // controller spread out, not at once.
  double preprocess = 0;
  // The load generator's own work per request (reading an answer, sending the next request)
  // on its single thread: requests sent at the same moment leave it this far apart. Part of
  // `before`'s round trip already; it only serializes simultaneous sends.
  double client = 0;
  // Spread (standard deviation) of a single request's round trip: one request of a burst may
  // reach the controller later than another sent with it, and a quantum tick between them
  // splits their batch.
  double stddev = 0;
  // The request image these were measured with, as the profiler names it (relative to the
  // models folder when inside it): decoding dominates `preprocess`, and a 28x28 PNG costs a
  // fifth of a 320x240 JPEG's round trip. Empty: not recorded (paper profiles, older files).
  std::string image;
  // How much longer a served batch computes than the profile's back-to-back one (seconds, per
  // batch, not per request): its input was decoded and preprocessed on an IO thread, another
  // core, just before. Measured on batches of 1 at a few requests in flight (no idle gaps),
  // in turns with batches of 1 back to back. The simulator adds it to each batch's cost.
  double served_extra = 0;
  // A miss served one request at a time (the server held no request since the loader's last
  // load), as `servelab measure` measures it on the served path (two copies of the model, room
  // for one, a closed loop of one client alternating between them): how long its batch waited
  // for the eviction and the load, and how long that first batch on the fresh module computed
  // (seconds; 0: not measured). The back-to-back loads of the cost profile flip between a fast
  // and a slow state of the machine for seconds at a time; served misses keep to the slow one.
  double served_miss_load = 0;
  double served_miss_batch = 0;
  // Each served miss's wait as measured (seconds; empty: not recorded): their spread, which
  // the back-to-back loads' samples lack when the profile caught one state only. The
  // simulator draws a served miss's wait from them, scaled to served_miss_load's mean.
  std::vector<double> served_miss_load_samples{};
  // A resident batch of 1 served one request at a time, the worker idling between requests
  // (seconds; 0: not measured, the profile's idle slowdown factor applies). Measured as is,
  // not as a factor over the back-to-back batch: on a shared machine the back-to-back batch
  // can flip between fast and slow states where a served one keeps to one of them.
  double served_idle_batch = 0;
  // How much longer a request's round trip (less its batch) is when it reaches a server that
  // held no request for kIdleIntakeGap or more than in a closed loop of one client (seconds;
  // 0: not measured): the IO, control and worker threads wake from sleep, caches and clocks
  // cooled. The simulator adds idle_extra_after(gap) to the request's way in.
  double idle_extra = 0;
  // The idle gap the profiler leaves before each of its idle requests (seconds).
  static constexpr double kIdleIntakeGap = 0.02;
  // The extra after the server held no request for `idle_s` seconds: linear from none at no
  // gap (the closed loop's) to all of idle_extra at kIdleIntakeGap, all of it beyond.
  double idle_extra_after(double idle_s) const {
    if (!(idle_extra > 0) || !(idle_s > 0)) return 0;
    return idle_s >= kIdleIntakeGap ? idle_extra : idle_extra * idle_s / kIdleIntakeGap;
  }

  // One draw of the IO thread's hold (`preprocess`): exact without noise or spread, else a
  // normal with `stddev`, kept above a tenth of the mean. Draws nothing from `rng` when it
  // returns the exact time.
  double sample_preprocess(CostNoise noise, std::mt19937_64& rng) const;
  void scale(double k);  // every time times k > 0
  // Non-negative terms, preprocess <= before; throws ConfigError.
  void validate() const;
};

// Measured cold bursts: clients that open a run all at once, fresh, on an idle server. Each
// is one burst's offsets (seconds, in send order) from its start until each request reached
// the controller; bursts of several sizes (a burst's size is its length). How many reach the
// controller by the first quantum tick varies far more from burst to burst than the
// per-request model gives, and with one worker that first batch sets the split of a closed
// loop for the whole run. Empty in paper profiles.
using ColdBursts = std::vector<std::vector<double>>;

// One measured cold burst for `n` requests sent at once: the first n offsets of a burst drawn
// uniformly among those of the smallest measured size >= n. Empty (and nothing drawn) unless
// noise is empirical and such a burst was measured.
std::vector<double> sample_cold_burst(const ColdBursts& bursts, uint32_t n, CostNoise noise,
                                      std::mt19937_64& rng);
void scale_cold_bursts(ColdBursts& bursts, double k);
// Non-empty bursts of finite offsets >= 0; throws ConfigError.
void validate_cold_bursts(const ColdBursts& bursts);

struct FrontEndProfile {
  std::map<std::string, RequestOverhead> overheads;  // by profile entry (model) name
  // Measured once on the profiler's zero-cost probe: the server's intake, not a model's, so
  // profile-level.
  ColdBursts cold_bursts;

  const RequestOverhead* overhead(const std::string& model) const;  // nullptr when absent
  std::vector<double> sample_cold_burst(uint32_t n, CostNoise noise, std::mt19937_64& rng) const {
    return servelab::sample_cold_burst(cold_bursts, n, noise, rng);
  }
  void scale(double k);  // overheads and bursts times k > 0
  void validate() const;  // throws ConfigError naming the model
};

}  // namespace servelab
