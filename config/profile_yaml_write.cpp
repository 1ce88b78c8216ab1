// Writing a profile file (profile_to_yaml, profile_yaml.h): the inverse of the reader in
// profile_yaml.cpp, for the profiler's measured profiles.
#include <cmath>

#include "config/profile_load_sources.h"
#include "config/profile_yaml.h"

namespace servelab::config {

YAML::Node profile_to_yaml(const ProfileFile& profile) {
  YAML::Node root;
  YAML::Node models(YAML::NodeType::Map);
  for (const ModelProfile& m : profile.costs.models) {
    YAML::Node n;
    n["size_bytes"] = m.size_bytes;
    YAML::Node lat(YAML::NodeType::Sequence);
    for (const BatchCost& c : m.batches) {
      YAML::Node b;
      b["batch"] = c.batch;
      b["mean"] = c.mean * 1e3;
      b["stddev"] = c.stddev * 1e3;
      if (!c.samples.empty()) {
        for (double s : c.samples) b["samples"].push_back(s * 1e3);
      }
      lat.push_back(b);
    }
    n["batch_latency_ms"] = lat;
    YAML::Node loads(YAML::NodeType::Map);
    for (int f = 0; f < kTierCount; ++f) {
      for (int t = f + 1; t < kTierCount; ++t) {
        if (!std::isnan(m.load_time[f][t])) {
          loads[std::string(tier_name(Tier(f))) + "->" + tier_name(Tier(t))] =
              m.load_time[f][t] * 1e3;
        }
      }
    }
    n["load_ms"] = loads;
    YAML::Node load_samples(YAML::NodeType::Map);
    for (int f = 0; f < kTierCount; ++f)
      for (int t = f + 1; t < kTierCount; ++t)
        if (!m.load_samples[f][t].empty()) {
          YAML::Node xs(YAML::NodeType::Sequence);
          for (double x : m.load_samples[f][t]) xs.push_back(x * 1e3);
          load_samples[std::string(tier_name(Tier(f))) + "->" + tier_name(Tier(t))] = xs;
        }
    if (load_samples.size()) n["load_samples_ms"] = load_samples;
    const YAML::Node sources = load_sources_to_yaml(m);
    if (sources.size()) n["load_sources_ms"] = sources;
    for (int t = int(Tier::Host); t < kTierCount; ++t)
      if (m.evict_time[t] > 0) n["evict_ms"][tier_name(Tier(t))] = m.evict_time[t] * 1e3;
    const RequestOverhead* o = profile.front_end.overhead(m.name);
    if (o && (o->before > 0 || o->after > 0)) {
      n["request_overhead_ms"]["before"] = o->before * 1e3;
      n["request_overhead_ms"]["after"] = o->after * 1e3;
      n["request_overhead_ms"]["preprocess"] = o->preprocess * 1e3;
      if (o->client > 0) n["request_overhead_ms"]["client"] = o->client * 1e3;
      if (o->stddev > 0) n["request_overhead_ms"]["stddev"] = o->stddev * 1e3;
      if (o->served_extra > 0) n["request_overhead_ms"]["served_extra"] = o->served_extra * 1e3;
      if (o->served_miss_load > 0)
        n["request_overhead_ms"]["served_miss_load"] = o->served_miss_load * 1e3;
      if (o->served_miss_batch > 0)
        n["request_overhead_ms"]["served_miss_batch"] = o->served_miss_batch * 1e3;
      if (o->served_idle_batch > 0)
        n["request_overhead_ms"]["served_idle_batch"] = o->served_idle_batch * 1e3;
      if (o->idle_extra > 0) n["request_overhead_ms"]["idle_extra"] = o->idle_extra * 1e3;
      if (!o->served_miss_load_samples.empty()) {
        YAML::Node xs(YAML::NodeType::Sequence);
        for (double x : o->served_miss_load_samples) xs.push_back(x * 1e3);
        xs.SetStyle(YAML::EmitterStyle::Flow);
        n["request_overhead_ms"]["served_miss_load_samples"] = xs;
      }
      if (!o->image.empty()) n["request_image"] = o->image;
    }
    models[m.name] = n;
  }
  root["models"] = models;
  for (const auto& burst : profile.front_end.cold_bursts) {
    YAML::Node b(YAML::NodeType::Sequence);
    b.SetStyle(YAML::EmitterStyle::Flow);
    for (double x : burst) b.push_back(x * 1e3);
    root["front_end"]["cold_bursts_ms"].push_back(b);
  }
  const SpeedDrift& d = profile.speed_drift;
  for (const auto& [key, c] : {std::pair{"fast", d.fast}, std::pair{"slow", d.slow}}) {
    if (!(c.share > 0)) continue;
    root["speed_drift"][key]["share"] = c.share;
    root["speed_drift"][key]["tau_ms"] = c.tau * 1e3;
  }
  for (const SpeedDrift::Window& x : d.spread) {
    YAML::Node win(YAML::NodeType::Map);
    win["window_ms"] = x.window * 1e3;
    YAML::Node q(YAML::NodeType::Sequence);
    q.SetStyle(YAML::EmitterStyle::Flow);
    for (double v : x.quantiles) q.push_back(v);
    win["quantiles"] = q;
    root["speed_drift"]["spread"].push_back(win);
  }
  for (const IdleSlowdown::Point& p : profile.idle_slowdown.points) {
    YAML::Node n(YAML::NodeType::Map);
    n.SetStyle(YAML::EmitterStyle::Flow);
    n["gap_ms"] = p.gap * 1e3;
    n["factor"] = p.factor;
    root["idle_slowdown"].push_back(n);
  }
  return root;
}

}  // namespace servelab::config
