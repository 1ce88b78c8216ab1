// Cost profiles: the measured cost of each model (size, batch latency per batch size, load
// time per tier pair), used by the simulator and by the engine's profiled executor.
// Plain data plus interpolation; no I/O (YAML reading lives in config/profile_yaml.h).
// Value types: const methods are safe to call from several threads; sampling methods use
// the RNG the caller passes (the caller owns it and keeps one stream per thread).
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/control/load_sources.h"
#include "engine/control/types.h"

namespace servelab {

// Latency of one batch size as measured: seconds.
struct BatchCost {
  uint32_t batch = 1;
  double mean = 0;
  double stddev = 0;
  std::vector<double> samples;  // optional raw measurements (seconds)
};

// How sample_batch_latency draws: the mean only, a normal with the measured standard
// deviation truncated at > 0, or one of the raw samples (empirical; falls back to normal
// where a size has no samples).
enum class CostNoise : uint8_t { None, Normal, Empirical };
bool parse_cost_noise(const std::string& s, CostNoise* out);  // none | normal | empirical
const char* cost_noise_name(CostNoise n);

struct ModelProfile {
  std::string name;
  uint64_t size_bytes = 0;
  std::vector<BatchCost> batches;  // sorted by batch size, sizes distinct, at least one
  // load_time[from][to] in seconds; NaN where not measured. Indexed by Tier values.
  std::array<std::array<double, kTierCount>, kTierCount> load_time;
  // Optional raw measurements of a measured pair's load (seconds), for noisy draws.
  std::array<std::array<std::vector<double>, kTierCount>, kTierCount> load_samples;
  // evict_time[tier]: seconds to free the model's copy in that tier (0: not measured). The
  // engine's loader frees a victim on its own thread just before the load that needs the
  // room, so a miss at a full tier waits for it too.
  std::array<double, kTierCount> evict_time{};
  // The Disk -> Host load by source, phase by phase, where measured (load_sources.h).
  LoadSources load_sources;
  // Front-end terms (request overheads, cold bursts) are not here: they belong to the
  // simulator and the profiler (calibration/terms/front_end_profile.h).

  ModelProfile();

  // Mean latency of a batch of b requests: linear between the two measured sizes around b,
  // linear extrapolation beyond the last (or before the first) from the nearest two, never
  // below zero; a single measured size gives a constant. O(log sizes).
  double batch_latency(uint32_t b) const;
  double batch_stddev(uint32_t b) const;  // interpolated the same way
  // The measured mean of every batch size, as a prior for ModelInfo::batch_seconds.
  std::vector<BatchSeconds> mean_batch_seconds() const;
  // The measured size nearest to b (ties to the smaller): where empirical draws take samples.
  const BatchCost& nearest_measured(uint32_t b) const;
  // One draw of a batch latency (> 0) according to `noise`. Empirical draws use the raw
  // samples of the nearest measured size, scaled by batch_latency(b) / that size's mean.
  // Draws are our own arithmetic over the engine's output: the same seed gives the same
  // values with every standard library.
  double sample_batch_latency(uint32_t b, CostNoise noise, std::mt19937_64& rng) const;
  // One draw of batch_latency(b) times a normal of mean 1 and standard deviation `cv`,
  // truncated at > 0: a pass-to-pass spread given from outside the profile (a real run's).
  double sample_batch_latency(uint32_t b, double cv, std::mt19937_64& rng) const;
  // Time to move the model from tier `from` to tier `to` (to > from). A pair that was not
  // measured is the sum of the measured steps in between (disk->device = disk->host +
  // host->device). Throws ConfigError naming the model and tiers if no path is measured.
  double load_seconds(Tier from, Tier to) const;
  bool has_load_time(Tier from, Tier to) const;
  // One draw of a load's time: load_seconds(from, to) exactly unless `noise` asks for noise
  // and the pair has raw samples; then one of them (empirical) or a normal with their
  // standard deviation (truncated at > 0), either scaled so that the draws' mean is
  // load_seconds. Draws nothing from `rng` when it returns the exact time.
  double sample_load_seconds(Tier from, Tier to, CostNoise noise, std::mt19937_64& rng) const;
  void set_load_time(Tier from, Tier to, double seconds);
  // Makes the Disk -> Host load the measured cost of `source` (its samples dropped: the
  // exact time). Throws ConfigError naming the model and the source where it was not measured.
  void use_load_source(LoadSource source);

  // Checks invariants (sorted distinct sizes, non-negative numbers); throws ConfigError.
  void validate() const;

  // Multiplies every time in the profile (batch latencies with their spread and samples, load
  // and eviction times, load samples, load sources) by `k` > 0: the same machine running k times slower.
  void scale_costs(double k);
};

// Seconds of a batch of b from points sorted by distinct batch size, interpolated and
// extrapolated as ModelProfile::batch_latency does; NaN when `points` is empty.
double interpolate_batch_seconds(const std::vector<BatchSeconds>& points, uint32_t b);

// A set of model profiles, looked up by name.
struct CostProfile {
  std::vector<ModelProfile> models;
  // nullptr when absent. O(models).
  const ModelProfile* find(const std::string& name) const;
  std::vector<std::string> names() const;
};

}  // namespace servelab
