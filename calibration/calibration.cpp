// Calibration probes: a short batch-cost measurement, and the profile rescaled to it.
#include "calibration/calibration.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace servelab::experiments {

namespace {

// probe(b) / base(b) at the probe's sizes, in size order.
std::vector<std::pair<uint32_t, double>> speed_ratios(const ModelProfile& base,
                                                      const ModelProfile& probe) {
  std::vector<std::pair<uint32_t, double>> out;
  for (const BatchCost& c : probe.batches) {
    const double before = base.batch_latency(c.batch);
    if (before > 0 && c.mean > 0) out.emplace_back(c.batch, c.mean / before);
  }
  return out;
}

double ratio_at(const std::vector<std::pair<uint32_t, double>>& r, uint32_t b) {
  if (b <= r.front().first) return r.front().second;
  if (b >= r.back().first) return r.back().second;
  auto hi = std::lower_bound(r.begin(), r.end(), b,
                             [](const auto& p, uint32_t x) { return p.first < x; });
  auto lo = hi - 1;
  const double t = double(b - lo->first) / double(hi->first - lo->first);
  return lo->second + t * (hi->second - lo->second);
}

// Each load pair both measured: probe / base, applied to the base's time and its samples.
void rescale_loads(ModelProfile& base, const ModelProfile& probe) {
  for (int f = 0; f < kTierCount; ++f)
    for (int t = f + 1; t < kTierCount; ++t) {
      const double before = base.load_time[f][t], now = probe.load_time[f][t];
      if (!(before > 0) || !(now > 0)) continue;  // NaN: not measured
      const double k = now / before;
      base.load_time[f][t] = now;
      for (double& s : base.load_samples[f][t]) s *= k;
      if (f == int(Tier::Disk) && t == int(Tier::Host))  // the other sources drift alike
        for (auto& c : base.load_sources)
          if (c) c->scale(k);
    }
}

// Batch sizes any probe measured for `name`, sorted and distinct.
std::vector<uint32_t> probed_sizes(const std::string& name,
                                   const std::vector<CostProfile>& probes) {
  std::vector<uint32_t> sizes;
  for (const CostProfile& p : probes)
    if (const ModelProfile* m = p.find(name))
      for (const BatchCost& c : m->batches) sizes.push_back(c.batch);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// The probes' mean at `size` (the ones that measured it) pooled with the base's value there.
double pooled_mean(const ModelProfile& base, uint32_t size,
                   const std::vector<CostProfile>& probes) {
  double sum = base.batch_latency(size);
  uint32_t n = 1;
  for (const CostProfile& p : probes)
    if (const ModelProfile* m = p.find(base.name))
      for (const BatchCost& c : m->batches)
        if (c.batch == size && c.mean > 0) sum += c.mean, ++n;
  return sum / n;
}

// Each load pair the base measured, averaged with the probes that measured it.
void pool_loads(ModelProfile& pooled, const ModelProfile& base,
                const std::vector<CostProfile>& probes) {
  for (int f = 0; f < kTierCount; ++f)
    for (int t = f + 1; t < kTierCount; ++t) {
      if (!(base.load_time[f][t] > 0)) continue;  // NaN: not measured
      double sum = base.load_time[f][t];
      uint32_t n = 1;
      for (const CostProfile& p : probes)
        if (const ModelProfile* m = p.find(base.name); m && m->load_time[f][t] > 0)
          sum += m->load_time[f][t], ++n;
      if (n > 1) pooled.load_time[f][t] = sum / n;
    }
}

}  // namespace

CostProfile pool_probes(const CostProfile& base, const std::vector<CostProfile>& probes) {
  CostProfile pooled;
  for (const ModelProfile& m : base.models) {
    const std::vector<uint32_t> sizes = probed_sizes(m.name, probes);
    if (sizes.empty()) continue;
    ModelProfile p;
    p.name = m.name;
    p.size_bytes = m.size_bytes;
    for (uint32_t b : sizes) p.batches.push_back({b, pooled_mean(m, b, probes), 0, {}});
    pool_loads(p, m, probes);
    pooled.models.push_back(std::move(p));
  }
  return pooled;
}

std::vector<uint32_t> probe_sizes(uint32_t max_batch) {
  std::vector<uint32_t> sizes;
  for (uint32_t b = 1; b < max_batch; b *= 2) sizes.push_back(b);
  sizes.push_back(std::max(1u, max_batch));
  return sizes;
}

config::ProfileFile rescale_to_probe(const config::ProfileFile& base, const CostProfile& probe) {
  config::ProfileFile out = base;
  for (ModelProfile& m : out.costs.models) {
    const ModelProfile* p = probe.find(m.name);
    if (!p) continue;
    rescale_loads(m, *p);
    const auto ratios = speed_ratios(m, *p);
    if (ratios.empty()) continue;
    for (BatchCost& c : m.batches) {
      const double k = ratio_at(ratios, c.batch);
      c.mean *= k;
      c.stddev *= k;
      for (double& s : c.samples) s *= k;
    }
  }
  return out;
}

void pool_served_misses(config::ProfileFile& out, const config::ProfileFile& base,
                        const std::vector<config::ProfileFile>& probes) {
  for (const auto& [name, o] : base.front_end.overheads) {
    if (!(o.served_miss_load > 0)) continue;  // not measured: the simulator does without
    double load = o.served_miss_load, batch = o.served_miss_batch;
    uint32_t n = 1;
    std::vector<double> samples = o.served_miss_load_samples;
    for (const config::ProfileFile& p : probes)
      if (const RequestOverhead* m = p.front_end.overhead(name); m && m->served_miss_load > 0) {
        load += m->served_miss_load, batch += m->served_miss_batch, ++n;
        // The spread of every state met so far, where the base recorded one.
        if (!samples.empty())
          samples.insert(samples.end(), m->served_miss_load_samples.begin(),
                         m->served_miss_load_samples.end());
      }
    samples.resize(std::min(samples.size(), kMaxServedMissSamples));  // the earliest kept
    RequestOverhead& w = out.front_end.overheads[name];
    w.served_miss_load = load / n;
    w.served_miss_batch = batch / n;
    w.served_miss_load_samples = std::move(samples);
  }
}

void write_calibrated_profile(const std::string& base, const std::string& out,
                              ProfileOptions options, std::vector<config::ProfileFile>& probes) {
  options.cold_bursts = 0;        // the base's bursts stay
  options.course_seconds = 0;     // and its speed course
  options.idle_seconds = 0;       // and its slowdown after idling
  options.overhead_requests = 1;  // overheads are not taken from the probe
  options.served_rounds = 0;      // nor served extras
  options.served_idle_turns = 0;  // nor the served idle slowdown
  options.source_loads = 0;       // the base's loads by source, rescaled with its own
  // Served misses drift too: as many as the caller asks (kCalibrationServedMisses, or 0
  // where a run cannot miss).
  options.load_samples = 10;  // a miss's cost drifts with the machine too (Rafiqi figure 2)
  options.min_load_seconds = 0;
  options.batches.samples = 3;
  options.batches.min_seconds_per_size = 0.25;
  options.batches.max_seconds_per_size = 0.5;
  probes.push_back(measure_profile(options));
  const config::ProfileFile before = config::load_profile_file(base);
  std::vector<CostProfile> costs;
  for (const config::ProfileFile& p : probes) costs.push_back(p.costs);
  config::ProfileFile scaled = rescale_to_probe(before, pool_probes(before.costs, costs));
  pool_served_misses(scaled, before, probes);
  std::filesystem::create_directories(std::filesystem::path(out).parent_path());
  YAML::Emitter e;
  e << config::profile_to_yaml(scaled);
  std::ofstream f(out);
  f << "# " << base << " rescaled to the mean of it and the " << probes.size()
    << " calibration probes taken so far, the last just before the run\n"
    << e.c_str() << "\n";
  if (!f.flush()) throw std::runtime_error(out + ": cannot write");
}

}  // namespace servelab::experiments
