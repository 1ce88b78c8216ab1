#include "engine/control/cost_profile.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/control/draws.h"
#include "engine/control/policy_params.h"

namespace servelab {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Linear interpolation of field `f` between the measured sizes around b, extrapolated from
// the nearest two outside the measured range.
template <class Point, class Field>
double interpolate(const std::vector<Point>& v, uint32_t b, Field f) {
  if (v.empty()) return kNaN;
  if (v.size() == 1) return f(v[0]);
  auto it = std::lower_bound(v.begin(), v.end(), b,
                             [](const Point& c, uint32_t x) { return c.batch < x; });
  if (it != v.end() && it->batch == b) return f(*it);
  size_t hi = it == v.begin() ? 1 : it == v.end() ? v.size() - 1 : size_t(it - v.begin());
  const Point& a = v[hi - 1];
  const Point& c = v[hi];
  double t = (double(b) - a.batch) / (double(c.batch) - a.batch);
  return std::max(0.0, f(a) + (f(c) - f(a)) * t);
}

}  // namespace

bool parse_cost_noise(const std::string& s, CostNoise* out) {
  if (s == "none") *out = CostNoise::None;
  else if (s == "normal") *out = CostNoise::Normal;
  else if (s == "empirical") *out = CostNoise::Empirical;
  else return false;
  return true;
}

const char* cost_noise_name(CostNoise n) {
  switch (n) {
    case CostNoise::None: return "none";
    case CostNoise::Normal: return "normal";
    case CostNoise::Empirical: return "empirical";
  }
  return "?";
}

ModelProfile::ModelProfile() {
  for (auto& row : load_time) row.fill(kNaN);
}

double ModelProfile::batch_latency(uint32_t b) const {
  return interpolate(batches, b, [](const BatchCost& c) { return c.mean; });
}

double ModelProfile::batch_stddev(uint32_t b) const {
  return interpolate(batches, b, [](const BatchCost& c) { return c.stddev; });
}

std::vector<BatchSeconds> ModelProfile::mean_batch_seconds() const {
  std::vector<BatchSeconds> out;
  for (const BatchCost& c : batches) out.push_back({c.batch, c.mean});
  return out;
}

double interpolate_batch_seconds(const std::vector<BatchSeconds>& points, uint32_t b) {
  return interpolate(points, b, [](const BatchSeconds& p) { return p.seconds; });
}

const BatchCost& ModelProfile::nearest_measured(uint32_t b) const {
  const BatchCost* best = &batches.front();
  for (const BatchCost& c : batches) {
    if (std::abs(double(c.batch) - b) < std::abs(double(best->batch) - b)) best = &c;
  }
  return *best;
}

double ModelProfile::sample_batch_latency(uint32_t b, CostNoise noise,
                                          std::mt19937_64& rng) const {
  double mean = batch_latency(b);
  if (noise == CostNoise::None) return mean;
  if (noise == CostNoise::Empirical) {
    const BatchCost* best = &nearest_measured(b);
    if (!best->samples.empty() && best->mean > 0) {
      size_t i = std::min(best->samples.size() - 1,
                          size_t(uniform01(rng) * double(best->samples.size())));
      return best->samples[i] * (mean / best->mean);
    }
  }
  double sd = batch_stddev(b);
  if (!(sd > 0) || !(mean > 0)) return mean;
  return positive_normal(mean, sd, rng);
}

double ModelProfile::sample_batch_latency(uint32_t b, double cv, std::mt19937_64& rng) const {
  const double mean = batch_latency(b);
  if (!(cv > 0) || !(mean > 0)) return mean;
  return positive_normal(mean, cv * mean, rng);
}

double ModelProfile::sample_load_seconds(Tier from, Tier to, CostNoise noise,
                                         std::mt19937_64& rng) const {
  const double mean = load_seconds(from, to);
  if (noise == CostNoise::None || int(from) >= int(to)) return mean;
  const std::vector<double>& xs = load_samples[int(from)][int(to)];
  if (xs.size() < 2 || !(mean > 0)) return mean;
  double sum = 0;
  for (double x : xs) sum += x;
  const double sample_mean = sum / double(xs.size());
  if (!(sample_mean > 0)) return mean;
  const double k = mean / sample_mean;
  if (noise == CostNoise::Empirical) {
    size_t i = std::min(xs.size() - 1, size_t(uniform01(rng) * double(xs.size())));
    return xs[i] * k;
  }
  double var = 0;
  for (double x : xs) var += (x - sample_mean) * (x - sample_mean);
  return positive_normal(mean, std::sqrt(var / double(xs.size() - 1)) * k, rng);
}

bool ModelProfile::has_load_time(Tier from, Tier to) const {
  int f = int(from), t = int(to);
  if (f >= t) return false;
  if (!std::isnan(load_time[f][t])) return true;
  for (int mid = f + 1; mid < t; ++mid) {
    if (has_load_time(from, Tier(mid)) && has_load_time(Tier(mid), to)) return true;
  }
  return false;
}

double ModelProfile::load_seconds(Tier from, Tier to) const {
  int f = int(from), t = int(to);
  if (f < t && !std::isnan(load_time[f][t])) return load_time[f][t];
  for (int mid = f + 1; mid < t; ++mid) {
    if (has_load_time(from, Tier(mid)) && has_load_time(Tier(mid), to)) {
      return load_seconds(from, Tier(mid)) + load_seconds(Tier(mid), to);
    }
  }
  throw ConfigError("profile of model '" + name + "' has no load time from " + tier_name(from) +
                    " to " + tier_name(to));
}

void ModelProfile::set_load_time(Tier from, Tier to, double seconds) {
  load_time[int(from)][int(to)] = seconds;
}

void ModelProfile::use_load_source(LoadSource source) {
  const std::optional<LoadCost>& cost = load_sources[int(source)];
  if (!cost)
    throw ConfigError("profile of model '" + name + "' has no load from source '" +
                      load_source_name(source) + "' (measured by servelab measure --source-loads)");
  set_load_time(Tier::Disk, Tier::Host, cost->total());
  load_samples[int(Tier::Disk)][int(Tier::Host)].clear();
}

void ModelProfile::scale_costs(double k) {
  for (BatchCost& c : batches) {
    c.mean *= k;
    c.stddev *= k;
    for (double& v : c.samples) v *= k;
  }
  for (auto& row : load_time)
    for (double& t : row) t *= k;  // NaN (not measured) stays NaN
  for (auto& row : load_samples)
    for (auto& xs : row)
      for (double& x : xs) x *= k;
  for (double& t : evict_time) t *= k;
  for (auto& c : load_sources)
    if (c) c->scale(k);
}

void ModelProfile::validate() const {
  auto fail = [&](const std::string& what) {
    throw ConfigError("profile of model '" + name + "': " + what);
  };
  if (batches.empty()) fail("no batch latencies");
  for (size_t i = 0; i < batches.size(); ++i) {
    const BatchCost& c = batches[i];
    if (c.batch == 0) fail("batch size 0");
    if (i > 0 && c.batch <= batches[i - 1].batch) fail("batch sizes must be increasing");
    if (!(c.mean >= 0) || !(c.stddev >= 0)) fail("negative or missing latency");
    for (double s : c.samples) {
      if (!(s > 0)) fail("non-positive latency sample");
    }
  }
  for (const auto& row : load_time) {
    for (double v : row) {
      if (v < 0) fail("negative load time");
    }
  }
  for (double v : evict_time)
    if (!(v >= 0) || !std::isfinite(v)) fail("negative or non-finite eviction time");
  for (int s = 0; s < kLoadSourceCount; ++s) {
    const std::optional<LoadCost>& c = load_sources[s];
    if (!c) continue;
    for (double v : {c->read, c->deserialize, c->copy, c->share, c->first_batch})
      if (!(v >= 0) || !std::isfinite(v))
        fail(std::string("negative or non-finite part of the load from ") +
             load_source_name(LoadSource(s)));
  }
}

const ModelProfile* CostProfile::find(const std::string& name) const {
  for (const ModelProfile& m : models) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::vector<std::string> CostProfile::names() const {
  std::vector<std::string> out;
  for (const ModelProfile& m : models) out.push_back(m.name);
  return out;
}

}  // namespace servelab
