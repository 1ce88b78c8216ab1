#include "config/profile_yaml.h"

#include <cmath>
#include <map>
#include <mutex>

#include "config/profile_load_sources.h"
#include "config/yaml_util.h"

namespace servelab::config {

namespace {

// "disk->host" -> (Disk, Host).
bool parse_tier_pair(const std::string& s, Tier* from, Tier* to) {
  size_t arrow = s.find("->");
  if (arrow == std::string::npos) return false;
  return parse_tier(s.substr(0, arrow), from) && parse_tier(s.substr(arrow + 2), to) &&
         int(*from) < int(*to);
}

BatchCost parse_batch(const YAML::Node& n, const Where& w) {
  check_keys(n, w, {"batch", "mean", "stddev", "samples"});
  if (!n["batch"] || !n["mean"]) fail(w, n, "needs 'batch' and 'mean' (milliseconds)");
  BatchCost c;
  c.batch = static_cast<uint32_t>(as_uint(n["batch"], w.child("batch")));
  c.mean = as_double(n["mean"], w.child("mean")) / 1e3;
  if (n["stddev"]) c.stddev = as_double(n["stddev"], w.child("stddev")) / 1e3;
  if (n["samples"]) {
    Where ws = w.child("samples");
    if (!n["samples"].IsSequence()) fail(ws, n["samples"], "expected a list of milliseconds");
    for (const auto& s : n["samples"]) c.samples.push_back(as_double(s, ws) / 1e3);
  }
  return c;
}

// `evict_ms: {host: 3.2}`: freeing the model's copy in a tier (not disk).
void parse_evicts(const YAML::Node& e, const Where& we, ModelProfile& m) {
  require_map(e, we);
  if (!e || !e.IsMap()) return;
  for (const auto& kv : e) {
    const std::string key = kv.first.as<std::string>();
    Tier t;
    if (!parse_tier(key, &t) || t == Tier::Disk)
      fail(we.child(key), kv.first, "unknown key '" + key + "' (expected host or device)");
    const double v = as_double(kv.second, we.child(key));
    if (!(v >= 0) || !std::isfinite(v)) fail(we.child(key), kv.second, "expected milliseconds >= 0");
    m.evict_time[int(t)] = v / 1e3;
  }
}

// Costs of one model; its front-end terms are read by parse_overhead and parse_bursts.
ModelProfile parse_model(const std::string& name, const YAML::Node& n, const Where& w) {
  check_keys(n, w, {"size_bytes", "size_mb", "batch_latency_ms", "load_ms", "load_samples_ms",
                    "load_sources_ms", "evict_ms", "request_overhead_ms", "request_image", "cold_bursts_ms", "note"});
  ModelProfile m;
  m.name = name;
  if (n["size_bytes"] && n["size_mb"]) fail(w, n, "give size_bytes or size_mb, not both");
  if (n["size_bytes"]) m.size_bytes = as_uint(n["size_bytes"], w.child("size_bytes"));
  else if (n["size_mb"]) m.size_bytes = uint64_t(std::llround(as_double(n["size_mb"], w.child("size_mb")) * kMB));
  else fail(w, n, "needs size_bytes or size_mb");
  Where wb = w.child("batch_latency_ms");
  const YAML::Node& lat = n["batch_latency_ms"];
  if (!lat || !lat.IsSequence() || lat.size() == 0) {
    fail(wb, lat ? lat : n, "needs a non-empty list of {batch, mean, stddev, samples}");
  }
  for (size_t i = 0; i < lat.size(); ++i) {
    m.batches.push_back(parse_batch(lat[i], wb.child(std::to_string(i))));
    if (i > 0 && m.batches[i].batch <= m.batches[i - 1].batch) {
      fail(wb, lat[i], "batch sizes must be listed in increasing order");
    }
  }
  Where wl = w.child("load_ms");
  require_map(n["load_ms"], wl);
  if (n["load_ms"] && n["load_ms"].IsMap()) {
    for (const auto& kv : n["load_ms"]) {
      std::string key = kv.first.as<std::string>();
      Tier from, to;
      if (!parse_tier_pair(key, &from, &to)) {
        fail(wl.child(key), kv.first,
             "unknown key '" + key + "' (expected a tier pair: disk->host, host->device, "
             "disk->device)");
      }
      m.set_load_time(from, to, as_double(kv.second, wl.child(key)) / 1e3);
    }
  }
  Where ws = w.child("load_samples_ms");
  require_map(n["load_samples_ms"], ws);
  if (n["load_samples_ms"] && n["load_samples_ms"].IsMap()) {
    for (const auto& kv : n["load_samples_ms"]) {
      std::string key = kv.first.as<std::string>();
      Tier from, to;
      if (!parse_tier_pair(key, &from, &to) || std::isnan(m.load_time[int(from)][int(to)]))
        fail(ws.child(key), kv.first,
             "'" + key + "' has samples but no load_ms entry (expected a measured tier pair)");
      if (!kv.second.IsSequence()) fail(ws.child(key), kv.second, "expected a list of numbers");
      std::vector<double>& xs = m.load_samples[int(from)][int(to)];
      for (size_t i = 0; i < kv.second.size(); ++i) {
        double v = as_double(kv.second[i], ws.child(key)) / 1e3;
        if (!(v >= 0)) fail(ws.child(key), kv.second[i], "load samples must be >= 0");
        xs.push_back(v);
      }
    }
  }
  parse_evicts(n["evict_ms"], w.child("evict_ms"), m);
  parse_load_sources(n["load_sources_ms"], w.child("load_sources_ms"), m);
  try {
    m.validate();
  } catch (const ConfigError& e) {
    fail(w, n, e.what());
  }
  return m;
}

// `request_overhead_ms: {before, after, preprocess, client, stddev, served_extra,
// served_miss_load, served_miss_batch, served_idle_batch, idle_extra}` of one model.
RequestOverhead parse_overhead(const YAML::Node& o, const Where& wo) {
  require_map(o, wo);
  check_keys(o, wo, {"before", "after", "preprocess", "client", "stddev", "served_extra",
                     "served_miss_load", "served_miss_batch", "served_idle_batch",
                     "idle_extra", "served_miss_load_samples"});
  RequestOverhead r;
  if (o["before"]) r.before = as_double(o["before"], wo.child("before")) / 1e3;
  if (o["after"]) r.after = as_double(o["after"], wo.child("after")) / 1e3;
  if (o["preprocess"]) r.preprocess = as_double(o["preprocess"], wo.child("preprocess")) / 1e3;
  if (o["client"]) r.client = as_double(o["client"], wo.child("client")) / 1e3;
  if (o["stddev"]) r.stddev = as_double(o["stddev"], wo.child("stddev")) / 1e3;
  if (o["served_extra"])
    r.served_extra = as_double(o["served_extra"], wo.child("served_extra")) / 1e3;
  if (o["served_miss_load"])
    r.served_miss_load = as_double(o["served_miss_load"], wo.child("served_miss_load")) / 1e3;
  if (o["served_miss_batch"])
    r.served_miss_batch = as_double(o["served_miss_batch"], wo.child("served_miss_batch")) / 1e3;
  if (o["served_idle_batch"])
    r.served_idle_batch = as_double(o["served_idle_batch"], wo.child("served_idle_batch")) / 1e3;
  if (o["idle_extra"]) r.idle_extra = as_double(o["idle_extra"], wo.child("idle_extra")) / 1e3;
  if (const YAML::Node& xs = o["served_miss_load_samples"]) {
    const Where wx = wo.child("served_miss_load_samples");
    if (!xs.IsSequence() || xs.size() > kMaxServedMissSamples)
      fail(wx, xs, "expected a list of at most " + std::to_string(kMaxServedMissSamples) +
                       " milliseconds");
    r.served_miss_load_samples.reserve(xs.size());
    for (size_t i = 0; i < xs.size(); ++i)
      r.served_miss_load_samples.push_back(as_double(xs[i], wx.child(std::to_string(i))) / 1e3);
  }
  try {
    r.validate();
  } catch (const ConfigError& e) {
    fail(wo, o, e.what());
  }
  return r;
}

// `cold_bursts_ms: [[ms, ...], ...]`.
ColdBursts parse_bursts(const YAML::Node& bursts, const Where& wc) {
  if (!bursts.IsSequence()) fail(wc, bursts, "expected a list of bursts (lists of milliseconds)");
  ColdBursts out;
  for (size_t i = 0; i < bursts.size(); ++i) {
    Where wi = wc.child(std::to_string(i));
    if (!bursts[i].IsSequence() || bursts[i].size() == 0)
      fail(wi, bursts[i], "expected a non-empty list of milliseconds");
    std::vector<double>& b = out.emplace_back();
    for (const auto& x : bursts[i]) b.push_back(as_double(x, wi) / 1e3);
  }
  try {
    validate_cold_bursts(out);
  } catch (const ConfigError& e) {
    fail(wc, bursts, e.what());
  }
  return out;
}

// `front_end: {cold_bursts_ms}`: the profile-level front-end terms.
ColdBursts parse_front_end(const YAML::Node& n, const Where& w) {
  require_map(n, w);
  check_keys(n, w, {"cold_bursts_ms"});
  return n["cold_bursts_ms"] ? parse_bursts(n["cold_bursts_ms"], w.child("cold_bursts_ms"))
                             : ColdBursts{};
}

// `{share, tau_ms}`: one course of the machine's speed.
SpeedDrift::Course parse_course(const YAML::Node& n, const Where& w) {
  require_map(n, w);
  check_keys(n, w, {"share", "tau_ms"});
  SpeedDrift::Course c;
  if (n["share"]) c.share = as_double(n["share"], w.child("share"));
  if (n["tau_ms"]) c.tau = as_double(n["tau_ms"], w.child("tau_ms")) / 1e3;
  return c;
}

// `spread: [{window_ms, quantiles: [...]}, ...]`, bounded before it is held.
std::vector<SpeedDrift::Window> parse_spread(const YAML::Node& n, const Where& w) {
  if (!n.IsSequence() || n.size() > 64) fail(w, n, "needs a list of at most 64 windows");
  std::vector<SpeedDrift::Window> out;
  for (size_t i = 0; i < n.size(); ++i) {
    const Where wi = w.child(std::to_string(i));
    require_map(n[i], wi);
    check_keys(n[i], wi, {"window_ms", "quantiles"});
    const YAML::Node& q = n[i]["quantiles"];
    if (!n[i]["window_ms"] || !q || !q.IsSequence() || q.size() > 10000)
      fail(wi, n[i], "needs window_ms and a list of at most 10000 quantiles");
    SpeedDrift::Window x;
    x.window = as_double(n[i]["window_ms"], wi.child("window_ms")) / 1e3;
    for (size_t j = 0; j < q.size(); ++j)
      x.quantiles.push_back(as_double(q[j], wi.child("quantiles").child(std::to_string(j))));
    out.push_back(std::move(x));
  }
  return out;
}

// `speed_drift: {fast: {share, tau_ms}, slow: {share, tau_ms}, spread: [{window_ms, quantiles},
// ...]}`: the machine's speed course and the spread of its speed per window.
SpeedDrift parse_speed_drift(const YAML::Node& n, const Where& w) {
  require_map(n, w);
  check_keys(n, w, {"fast", "slow", "spread"});
  SpeedDrift d;
  if (n["fast"]) d.fast = parse_course(n["fast"], w.child("fast"));
  if (n["slow"]) d.slow = parse_course(n["slow"], w.child("slow"));
  if (const YAML::Node& s = n["spread"]) d.spread = parse_spread(s, w.child("spread"));
  try {
    d.validate();
  } catch (const ConfigError& e) {
    fail(w, n, e.what());
  }
  return d;
}

// `idle_slowdown: [{gap_ms, factor}, ...]`: the cost after an idle gap over back to back.
IdleSlowdown parse_idle_slowdown(const YAML::Node& n, const Where& w) {
  if (!n.IsSequence()) fail(w, n, "needs a list of {gap_ms, factor}");
  IdleSlowdown s;
  for (size_t i = 0; i < n.size(); ++i) {
    const Where wi = w.child(std::to_string(i));
    require_map(n[i], wi);
    check_keys(n[i], wi, {"gap_ms", "factor"});
    if (!n[i]["gap_ms"] || !n[i]["factor"]) fail(wi, n[i], "needs gap_ms and factor");
    s.points.push_back({as_double(n[i]["gap_ms"], wi.child("gap_ms")) / 1e3,
                        as_double(n[i]["factor"], wi.child("factor"))});
  }
  try {
    s.validate();
  } catch (const ConfigError& e) {
    fail(w, n, e.what());
  }
  return s;
}

}  // namespace

ProfileFile parse_profile_file(const YAML::Node& root, const std::string& file) {
  Where w{file, ""};
  check_keys(root, w,
             {"description", "source", "models", "front_end", "speed_drift", "idle_slowdown"});
  const YAML::Node& models = root["models"];
  if (!models || !models.IsMap() || models.size() == 0) {
    fail(w.child("models"), models ? models : root, "needs a mapping of model name -> profile");
  }
  ProfileFile p;
  bool old_bursts = false;
  for (const auto& kv : models) {
    const std::string name = as_model_name(kv.first, w.child("models"));
    Where wm = w.child("models").child(name);
    if (p.costs.find(name)) fail(wm, kv.first, "model '" + name + "' listed twice");
    p.costs.models.push_back(parse_model(name, kv.second, wm));
    if (const YAML::Node& o = kv.second["request_overhead_ms"])
      p.front_end.overheads[name] = parse_overhead(o, wm.child("request_overhead_ms"));
    if (const YAML::Node& i = kv.second["request_image"]) {
      if (!kv.second["request_overhead_ms"])
        fail(wm.child("request_image"), i, "names the image of a request_overhead_ms: give both");
      p.front_end.overheads[name].image = as_string(i, wm.child("request_image"));
    }
    // The old form kept the probe's bursts in every model, copies of one measurement: the
    // first model's stand for the profile.
    if (const YAML::Node& b = kv.second["cold_bursts_ms"]) {
      ColdBursts bursts = parse_bursts(b, wm.child("cold_bursts_ms"));
      if (!old_bursts) p.front_end.cold_bursts = std::move(bursts);
      old_bursts = true;
    }
  }
  if (const YAML::Node& fe = root["front_end"]) {
    if (old_bursts && fe["cold_bursts_ms"])
      fail(w.child("front_end"), fe,
           "cold bursts are given here and per model (the old form): keep this section's");
    ColdBursts bursts = parse_front_end(fe, w.child("front_end"));
    if (!old_bursts) p.front_end.cold_bursts = std::move(bursts);
  }
  if (const YAML::Node& d = root["speed_drift"])
    p.speed_drift = parse_speed_drift(d, w.child("speed_drift"));
  if (const YAML::Node& d = root["idle_slowdown"])
    p.idle_slowdown = parse_idle_slowdown(d, w.child("idle_slowdown"));
  return p;
}

namespace {

// The profiles parsed so far in this process, by path, with the text they were parsed from: a
// sweep or a search reads one profile for each of its hundreds of runs, and a measured profile
// is a megabyte of YAML, whose parsing takes far longer than reading and comparing its text.
// A file whose text changed is parsed again. Any thread.
class ParsedProfiles {
 public:
  ProfileFile load(const std::string& path) {
    std::string text = read_text(path);  // throws ConfigError naming the file
    {
      std::lock_guard lock(mutex_);
      auto it = parsed_.find(path);
      if (it != parsed_.end() && it->second.text == text) return it->second.profile;
    }
    ProfileFile p = parse_profile_file(load_text(text, path), path);
    std::lock_guard lock(mutex_);
    parsed_.insert_or_assign(path, Entry{std::move(text), p});
    return p;
  }

 private:
  struct Entry {
    std::string text;
    ProfileFile profile;
  };
  std::mutex mutex_;
  std::map<std::string, Entry> parsed_;
};

}  // namespace

ProfileFile load_profile_file(const std::string& path) {
  static ParsedProfiles profiles;
  return profiles.load(path);
}

CostProfile parse_profile(const YAML::Node& root, const std::string& file) {
  return parse_profile_file(root, file).costs;
}

CostProfile load_profile(const std::string& path) { return load_profile_file(path).costs; }

}  // namespace servelab::config
