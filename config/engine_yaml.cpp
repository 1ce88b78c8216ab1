#include "config/engine_yaml.h"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "config/bounds.h"
#include "config/yaml_util.h"

namespace servelab::config {

namespace {

// `null`, `none`, `never` or `unlimited` mean "no limit".
bool is_unlimited(const YAML::Node& n) {
  if (n.IsNull()) return true;
  if (!n.IsScalar()) return false;
  const std::string& s = n.Scalar();
  return s == "none" || s == "never" || s == "unlimited" || s == "~";
}

uint32_t parse_count(const YAML::Node& n, const Where& w, Range<uint32_t> r) {
  uint64_t v = as_uint(n, w);
  if (v < r.lo || v > r.hi)
    fail(w, n, "must be an integer in " + std::to_string(r.lo) + ".." + std::to_string(r.hi));
  return static_cast<uint32_t>(v);
}

// Milliseconds within `r` (or none/never/unlimited with allow_never: kNever), as seconds.
Time parse_ms_in(const YAML::Node& n, const Where& w, Range<double> r, bool allow_never) {
  const Time t = parse_ms(n, w, allow_never);
  if (t != kNever && !r.holds(t * 1e3)) {
    std::ostringstream msg;
    msg << std::setprecision(12) << "must be between " << r.lo << " and " << r.hi << " ms";
    fail(w, n, msg.str());
  }
  return t;
}

void parse_tiers(const YAML::Node& tiers, const Where& w, ControllerConfig& c) {
  check_keys(tiers, w, {"host", "device"});
  if (!tiers.IsMap()) return;
  for (const auto& kv : tiers) {
    std::string name = kv.first.as<std::string>();
    Tier tier;
    parse_tier(name, &tier);
    Where wt = w.child(name);
    const YAML::Node& t = kv.second;
    check_keys(t, wt, {"bytes", "megabytes", "models"});
    TierBudget& b = c.budgets[int(tier)];
    if (t["bytes"] && t["megabytes"]) fail(wt, t, "give bytes or megabytes, not both");
    if (t["bytes"]) b.bytes = is_unlimited(t["bytes"]) ? UINT64_MAX : as_uint(t["bytes"], wt.child("bytes"));
    if (t["megabytes"]) {
      if (is_unlimited(t["megabytes"])) {
        b.bytes = UINT64_MAX;
      } else {
        double mb = as_double(t["megabytes"], wt.child("megabytes"));
        if (mb < 0) fail(wt.child("megabytes"), t["megabytes"], "must not be negative");
        b.bytes = uint64_t(std::llround(mb * kMB));
      }
    }
    if (t["models"]) {
      b.models = is_unlimited(t["models"]) ? UINT32_MAX
                                            : parse_count(t["models"], wt.child("models"),
                                                          {0, UINT32_MAX});
    }
  }
}

}  // namespace

PolicySpec parse_policy(const YAML::Node& n, const Where& w, const PolicySpec& fallback) {
  if (!n) return fallback;
  if (n.IsScalar()) return PolicySpec{n.Scalar(), {}};  // `batching: none`
  if (!n.IsMap()) fail(w, n, "expected a policy name or {name: ..., parameters...}");
  if (!n["name"]) fail(w, n, "needs 'name' (a registered policy)");
  PolicySpec spec{as_string(n["name"], w.child("name")), {}};
  for (const auto& kv : n) {
    std::string key = kv.first.as<std::string>();
    if (key != "name") spec.params.set(key, as_param_string(kv.second, w.child(key)));
  }
  return spec;
}

YAML::Node emit_policy(const PolicySpec& spec) {
  YAML::Node n;
  n["name"] = spec.name;
  for (const auto& [k, v] : spec.params.values()) n[k] = v;
  return n;
}

double to_ms(Time t) { return std::round(t * 1e9) / 1e6; }

Time parse_ms(const YAML::Node& n, const Where& w, bool allow_never) {
  if (allow_never && is_unlimited(n)) return kNever;
  double v = as_double(n, w);
  if (!(v >= 0) || !std::isfinite(v)) fail(w, n, "must be a finite number >= 0");
  return v / 1e3;
}

EngineSection parse_engine_section(const YAML::Node& root, const std::string& file) {
  EngineSection s;
  ControllerConfig& c = s.control;
  Where w{file, "engine"};
  const YAML::Node& e = root["engine"];
  check_keys(e, w,
             {"workers", "quantum_ms", "max_batch", "exec_tier", "tiers", "max_loads_in_flight",
              "request_timeout_ms", "queue_bound", "slo_ms", "contexts", "late_requests",
              "weights"});
  if (e && e.IsMap()) {
    if (e["workers"]) c.workers = parse_count(e["workers"], w.child("workers"), kWorkers);
    if (e["quantum_ms"])
      c.quantum = parse_ms_in(e["quantum_ms"], w.child("quantum_ms"), kQuantumMs, false);
    if (e["max_batch"]) c.max_batch = parse_count(e["max_batch"], w.child("max_batch"), kMaxBatch);
    if (e["exec_tier"]) {
      std::string t = as_string(e["exec_tier"], w.child("exec_tier"));
      if (!parse_tier(t, &c.exec_tier) || c.exec_tier == Tier::Disk) {
        fail(w.child("exec_tier"), e["exec_tier"], "expected host or device, got '" + t + "'");
      }
    }
    if (e["tiers"]) parse_tiers(e["tiers"], w.child("tiers"), c);
    if (e["max_loads_in_flight"]) {
      c.max_loads_in_flight =
          parse_count(e["max_loads_in_flight"], w.child("max_loads_in_flight"), kLoadsInFlight);
    }
    if (e["request_timeout_ms"]) {
      c.request_timeout =
          parse_ms_in(e["request_timeout_ms"], w.child("request_timeout_ms"), kRequestTimeoutMs, true);
    }
    if (e["queue_bound"])
      c.queue_bound = parse_count(e["queue_bound"], w.child("queue_bound"), kQueueBound);
    if (e["slo_ms"] && !is_unlimited(e["slo_ms"])) {
      s.slo = parse_ms(e["slo_ms"], w.child("slo_ms"), false);
    }
    if (const YAML::Node& l = e["late_requests"]) {
      const std::string v = as_string(l, w.child("late_requests"));
      if (v != "serve" && v != "drop")
        fail(w.child("late_requests"), l, "expected serve (late, the default) or drop, got '" + v + "'");
      c.drop_late = v == "drop";
    }
    if (e["contexts"]) s.contexts = parse_count(e["contexts"], w.child("contexts"), kContexts);
    if (const YAML::Node& v = e["weights"]) {
      const std::string kind = as_string(v, w.child("weights"));
      if (kind != "shared" && kind != "private")
        fail(w.child("weights"), v, "expected shared or private, got '" + kind + "'");
      s.private_weights = kind == "private";
    }
  }
  Where wp{file, "policies"};
  const YAML::Node& p = root["policies"];
  check_keys(p, wp, {"batching", "eviction", "scheduling"});
  if (p && p.IsMap()) {
    c.batching = parse_policy(p["batching"], wp.child("batching"), c.batching);
    c.eviction = parse_policy(p["eviction"], wp.child("eviction"), c.eviction);
    c.scheduling = parse_policy(p["scheduling"], wp.child("scheduling"), c.scheduling);
  }
  return s;
}

ControllerConfig parse_engine_config(const YAML::Node& root, const std::string& file) {
  return parse_engine_section(root, file).control;
}

void emit_engine_section(const EngineSection& s, YAML::Node& root) {
  const ControllerConfig& c = s.control;
  YAML::Node e;
  e["workers"] = c.workers;
  e["quantum_ms"] = to_ms(c.quantum);
  e["max_batch"] = c.max_batch;
  e["exec_tier"] = tier_name(c.exec_tier);
  for (Tier t : {Tier::Host, Tier::Device}) {
    const TierBudget& b = c.budgets[int(t)];
    YAML::Node n;
    if (b.bytes == UINT64_MAX) n["bytes"] = "unlimited";
    else n["bytes"] = b.bytes;
    if (b.models == UINT32_MAX) n["models"] = "unlimited";
    else n["models"] = b.models;
    e["tiers"][tier_name(t)] = n;
  }
  e["max_loads_in_flight"] = c.max_loads_in_flight;
  if (std::isinf(c.request_timeout)) e["request_timeout_ms"] = "none";
  else e["request_timeout_ms"] = to_ms(c.request_timeout);
  e["queue_bound"] = c.queue_bound;
  if (s.slo) e["slo_ms"] = to_ms(*s.slo);
  else e["slo_ms"] = "none";
  e["contexts"] = s.contexts;
  e["late_requests"] = c.drop_late ? "drop" : "serve";
  e["weights"] = s.private_weights ? "private" : "shared";
  root["engine"] = e;
  YAML::Node p;
  p["batching"] = emit_policy(c.batching);
  p["eviction"] = emit_policy(c.eviction);
  p["scheduling"] = emit_policy(c.scheduling);
  root["policies"] = p;
}

}  // namespace servelab::config
