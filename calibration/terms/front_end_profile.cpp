#include "calibration/terms/front_end_profile.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "engine/control/draws.h"
#include "engine/control/policy_params.h"  // ConfigError

namespace servelab {

double RequestOverhead::sample_preprocess(CostNoise noise, std::mt19937_64& rng) const {
  if (noise == CostNoise::None || !(stddev > 0) || !(preprocess > 0)) return preprocess;
  return std::max(0.1 * preprocess, preprocess + stddev * standard_normal(rng));
}

void RequestOverhead::scale(double k) {
  before *= k;
  after *= k;
  preprocess *= k;
  client *= k;
  stddev *= k;
  served_extra *= k;
  served_miss_load *= k;
  served_miss_batch *= k;
  served_idle_batch *= k;
  idle_extra *= k;
  for (double& x : served_miss_load_samples) x *= k;
}

void RequestOverhead::validate() const {
  const std::pair<const char*, double> terms[] = {
      {"before", before},
      {"after", after},
      {"preprocess", preprocess},
      {"client", client},
      {"stddev", stddev},
      {"served_extra", served_extra},
      {"served_miss_load", served_miss_load},
      {"served_miss_batch", served_miss_batch},
      {"served_idle_batch", served_idle_batch},
      {"idle_extra", idle_extra}};
  for (const auto& [name, value] : terms)
    if (!(value >= 0) || !std::isfinite(value))
      throw ConfigError(std::string("request overhead: ") + name + " must be finite and >= 0");
  if (preprocess > before) throw ConfigError("request overhead: preprocess > before");
  if (served_miss_load_samples.size() > kMaxServedMissSamples)
    throw ConfigError("request overhead: at most " + std::to_string(kMaxServedMissSamples) +
                      " served_miss_load_samples");
  for (double x : served_miss_load_samples)
    if (!(x >= 0) || !std::isfinite(x))
      throw ConfigError("request overhead: served_miss_load_samples must be finite and >= 0");
}

std::vector<double> sample_cold_burst(const ColdBursts& bursts, uint32_t n, CostNoise noise,
                                      std::mt19937_64& rng) {
  if (noise != CostNoise::Empirical || n == 0) return {};
  size_t size = 0;
  for (const auto& b : bursts)
    if (b.size() >= n && (size == 0 || b.size() < size)) size = b.size();
  if (size == 0) return {};
  std::vector<const std::vector<double>*> pool;
  for (const auto& b : bursts)
    if (b.size() == size) pool.push_back(&b);
  const std::vector<double>& b = *pool[rng() % pool.size()];
  return {b.begin(), b.begin() + n};
}

void scale_cold_bursts(ColdBursts& bursts, double k) {
  for (auto& burst : bursts)
    for (double& x : burst) x *= k;
}

void validate_cold_bursts(const ColdBursts& bursts) {
  for (const auto& burst : bursts) {
    if (burst.empty()) throw ConfigError("empty cold burst");
    for (double x : burst)
      if (!(x >= 0) || !std::isfinite(x))
        throw ConfigError("cold burst offsets must be finite and >= 0");
  }
}

const RequestOverhead* FrontEndProfile::overhead(const std::string& model) const {
  auto it = overheads.find(model);
  return it == overheads.end() ? nullptr : &it->second;
}

void FrontEndProfile::scale(double k) {
  for (auto& [name, o] : overheads) o.scale(k);
  scale_cold_bursts(cold_bursts, k);
}

void FrontEndProfile::validate() const {
  for (const auto& [name, o] : overheads) {
    try {
      o.validate();
    } catch (const ConfigError& e) {
      throw ConfigError("profile of model '" + name + "': " + e.what());
    }
  }
  validate_cold_bursts(cold_bursts);
}

}  // namespace servelab
