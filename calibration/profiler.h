// `servelab measure`: measures each model's cost on this machine in the profile format the
// simulator reads (engine/control/cost_profile.h, config/profile_yaml.h), through the engine's
// own executor: batch latency per batch size (mean, stddev, raw samples) of the executor's
// run() on the preprocessed request image, the executor's disk->host load, size (parameter +
// buffer bytes), and the request overhead a client sees outside the batch (HTTP round trip
// and preprocessing, split before/after the batch).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/profile_yaml.h"
#include "engine/control/cost_profile.h"
#include "engine/runtime/engine.h"
#include "calibration/batch_rounds.h"

namespace servelab::experiments {

inline std::vector<uint32_t> dense_sizes(uint32_t max) {
  std::vector<uint32_t> v;
  for (uint32_t b = 1; b <= max; ++b) v.push_back(b);
  return v;
}

struct ProfileOptions {
  std::string models_dir = "models";        // holds <name>.pt and <name>.json manifests
  std::vector<std::string> models;          // names; must be non-empty
  // Every size up to 32: on a CPU the cost need not be linear in between (LibTorch switches
  // convolution algorithms at batch 16: MKL-DNN instead of im2col + BLAS for 1x1 kernels with
  // one thread), so interpolating across a coarse grid can mispredict whole ranges.
  std::vector<uint32_t> batch_sizes = dense_sizes(32);
  uint32_t warmup = 1;                      // untimed passes per batch size
  // How many timed passes each size takes and in what order (batch_rounds.h): at least
  // `samples`; cheap sizes keep sampling in the same rounds until they have spent
  // min_seconds_per_size, up to max_samples, enough draws to show a shared machine's slow
  // passes, which decide tail latencies (a pass that misses a quantum tick costs a whole
  // quantum more); blocks of about block_seconds, each timed pass after one of its own size.
  BatchRoundsOptions batches;
  // Timed loads (+ first batch) per model: at least load_samples, then on until
  // min_load_seconds are spent, up to max_load_samples. A miss's cost decides tail latencies
  // where most requests miss (Rafiqi figure 2); with the simulator drawing from the samples,
  // the p99 of its draws is the largest sample until there are 100 of them.
  uint32_t load_samples = 15;
  double min_load_seconds = 8.0;
  uint32_t max_load_samples = 200;
  // Timed loads from each other source (calibration/load_sources.h: the file read from the
  // disk, a weight store's blobs resident and read from the disk, a sibling loaded) per model: the profile's
  // load_sources_ms, which simulation.load_source selects. 0: none measured.
  uint32_t source_loads = 5;
  // Batches of 1 back to back for this long, on the model whose batch of 1 costs most: the
  // machine's speed course (calibration/terms/speed_course.h). 0: none.
  double course_seconds = 10.0;
  // Blocks of batches of 1 after idle gaps and back to back, on the same model, for this long:
  // the machine's slowdown after idling (calibration/terms/idle_slowdown.h), where served_idle_turns
  // is 0. 0: none.
  double idle_seconds = 8.0;
  int threads = 1;                          // LibTorch intra-op threads (the engine default)
  std::string image;                        // request image; default models_dir/images/gradient.jpg
  uint32_t overhead_requests = 100;         // probe round trips for the request overhead
  uint32_t io_threads = 2;                  // the server's IO threads (ServerOptions default)
  // Turns of served batches and back-to-back ones for each model's served extra
  // (measure_served_extra), each about served_turn_seconds long. 0: none measured.
  uint32_t served_rounds = 6;
  double served_turn_seconds = 0.3;
  // Turns of a closed loop of one client served through the in-process server, the engine
  // ticking every served_idle_quantum (a quantum-mode worker then idles each round trip until
  // the next tick), each about served_idle_turn_seconds long and followed by as long back to
  // back, on the model whose batch of 1 costs most: the slowdown of a worker serving one
  // request at a time, sustained (measure_served_idle), which takes seconds to set in; and as
  // many event-driven turns (the worker idles one round trip), how much of it a short gap
  // brings. When on, they are the profile's idle_slowdown (two points) in place of
  // idle_seconds' blocks.
  // 0 turns: none.
  uint32_t served_idle_turns = 3;
  double served_idle_turn_seconds = 20.0;
  double served_idle_quantum = 0.010;
  // Misses served one at a time, per model (measure_served_miss, the engine ticking every
  // served_idle_quantum): their mean load wait and first batch, the request overhead's
  // served_miss_load and served_miss_batch. 0: none.
  uint32_t served_miss_requests = 48;
  // Cold bursts (measure_cold_bursts) of each size, `cold_bursts` times: a closed loop of up to
  // 64 in flight opens with one of them (a prefix of the next larger size); larger ones open
  // through the simulator's IO-thread model.
  std::vector<uint32_t> cold_burst_sizes = {2, 4, 8, 16, 32, 64};
  uint32_t cold_bursts = 12;
};

// A model of o.models_dir as the engine serves it: its file and its manifest's preprocessing
// and labels. Throws std::runtime_error when the file is missing.
runtime::ModelSpec model_spec(const ProfileOptions& o, const std::string& name);

// Classify calls against the in-process HTTP server on a zero-cost probe model: `seconds`, the
// mean client-observed round trip of `requests` calls at concurrency 1 (after `warmup`): the
// server's path without a batch; `capacity_rps`, requests per second it answers under a
// closed-loop burst (concurrency 32): the rate the IO side admits requests.
struct RoundTrip {
  double seconds = 0;
  double capacity_rps = 0;
  double client_seconds = 0;  // the load generator's thread CPU time per request
};
RoundTrip measure_round_trip(const std::string& image, uint32_t requests, uint32_t warmup = 10);

// The overhead around a real batch: classify calls at concurrency 1 against the in-process
// server running `spec` with engine options `eo` (the profiler: LibTorch on the CPU, one
// worker, event mode, no batching), each call's round trip less the batch's load and compute
// as the engine reports them; mean and stddev after `warmup` calls. More than the zero-cost
// probe's round trip: after a real batch the caches are cold and the server's threads have
// slept through it, and at
// concurrency 1 with quantum ticks that difference decides how many ticks each request waits.
// Then `idle_requests` calls one at a time, each after the server idled
// RequestOverhead::kIdleIntakeGap: `idle_seconds`, their mean of the same span (NaN: none
// answered, or none asked).
struct ModelOverhead {
  double seconds = 0;
  double stddev = 0;
  double idle_seconds = 0;
};
ModelOverhead measure_model_overhead(const runtime::EngineOptions& eo,
                                     const runtime::ModelSpec& spec, const std::string& image,
                                     uint32_t requests, uint32_t warmup = 5,
                                     uint32_t idle_requests = 16);

// Sleeps until the engine's next quantum tick (ticks fall at multiples of `quantum` in engine
// time) and returns the engine time on waking: lines a run's start up with the ticks.
Time sleep_until_tick(runtime::Engine& engine, Time quantum);

// Cold bursts as real mode's closed loops open: for each size in `sizes`, `per_size` times,
// that many clients on fresh connections send at once just after a quantum tick, a quantum
// after the last answers, to the in-process server on a zero-cost probe model. Each burst is
// its requests' offsets (seconds, in send order) from the start until the controller queued
// them. A burst that does not reach the controller within `quantum` is measured again.
std::vector<std::vector<double>> measure_cold_bursts(const std::string& image,
                                                     const std::vector<uint32_t>& sizes,
                                                     uint32_t per_size, double quantum = 0.25);

// Told the index of each phase of plan_profile(options) (calibration/profile_plan.h) as it
// starts, and the plan's size once all are done.
using ProfilePhaseStarted = std::function<void(size_t phase)>;

// Measures every model: its costs and request overhead, and once, on the probe, the cold
// bursts (profile-level). Throws std::runtime_error naming the model and file on a missing or
// broken model. `log` (may be empty) receives one line per measured item, `started` (may be
// empty) each phase of the plan as it starts.
config::ProfileFile measure_profile(const ProfileOptions& options,
                                    const std::function<void(const std::string&)>& log = {},
                                    const ProfilePhaseStarted& started = {});

// Writes `measured` to `path` (creating folders), keeping the models (costs and overheads) of
// an existing file at `path` that were not measured again, and its cold bursts unless new ones
// were measured; records host, threads and batch sizes in `source`.
void save_profile(const std::string& path, const config::ProfileFile& measured,
                  const ProfileOptions& o);

// ensure_profile (backends.h) with the probe given in full: measures options.models that the
// profile at `path` lacks (all of them with `remeasure`) and merges them in. Tests use a
// reduced probe (few sizes, short sampling, few bursts) to stay fast.
void ensure_profile_with(const std::string& path, ProfileOptions options, bool remeasure = false);

// The default location of this machine's measured profile:
// <source>/experiments/profiles/local/<hostname>.yaml (gitignored).
std::string local_profile_path();

// The request image of profiles and runs that name none, relative to the models folder.
inline constexpr const char* kDefaultRequestImage = "images/gradient.jpg";

// How a profile names the request image it measured overheads with (RequestOverhead::image):
// the path relative to `models_dir` when the image is inside it, else the absolute path; the
// default image (`image` empty) is kDefaultRequestImage.
std::string profile_image_name(const std::string& image, const std::string& models_dir);

// Models the profile file at `path` lacks (all of `names` if it does not exist), and models
// whose entry is stale: without a request overhead, in a file without cold bursts (measured
// before the profiler measured them), or, when `image` (a profile_image_name) is given, with
// overheads measured with another image (an entry that names none was measured with the
// default one).
std::vector<std::string> missing_models(const std::string& path,
                                        const std::vector<std::string>& names,
                                        const std::string& image = "");

}  // namespace servelab::experiments
