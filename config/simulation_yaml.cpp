#include "config/simulation_yaml.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "config/bounds.h"

namespace servelab::config {

namespace {

constexpr uint32_t kMaxServers = 4096;

double positive_seconds(const YAML::Node& n, const Where& w, bool allow_zero) {
  const double v = as_double(n, w);
  if (!std::isfinite(v) || v < 0 || (!allow_zero && v == 0))
    fail(w, n, allow_zero ? "expected seconds >= 0" : "expected seconds > 0");
  return v;
}

bool is_none(const YAML::Node& n) { return n.IsScalar() && n.Scalar() == "none"; }

// `speed_trace:` a list of [from_s, factor] pairs, from_s strictly increasing and >= 0,
// factor > 0.
std::vector<SpeedWindow> parse_speed_trace(const YAML::Node& n, const Where& w) {
  if (!n.IsSequence()) fail(w, n, "expected a list of [from_s, factor] pairs");
  std::vector<SpeedWindow> out;
  for (size_t i = 0; i < n.size(); ++i) {
    Where wi = w.child(std::to_string(i));
    const YAML::Node& e = n[i];
    if (!e.IsSequence() || e.size() != 2) fail(wi, e, "expected [from_s, factor]");
    SpeedWindow sw{as_double(e[0], wi.child("0")), as_double(e[1], wi.child("1"))};
    if (!(sw.from >= 0) || !std::isfinite(sw.from) || (!out.empty() && !(sw.from > out.back().from)))
      fail(wi.child("0"), e[0], "expected a time in seconds >= 0, after the previous entry's");
    if (!(sw.factor > 0) || !std::isfinite(sw.factor))
      fail(wi.child("1"), e[1], "expected a positive factor");
    out.push_back(sw);
  }
  return out;
}

// noise: true = normal, false = none, or the kind by name.
CostNoise parse_noise(const YAML::Node& n, const Where& w) {
  CostNoise noise;
  if (parse_cost_noise(as_string(n, w), &noise)) return noise;
  return as_bool(n, w) ? CostNoise::Normal : CostNoise::None;
}

Tier parse_preload(const YAML::Node& n, const Where& w) {
  const std::string v = as_string(n, w);
  Tier t = Tier::Disk;
  if (v != "none" && !parse_tier(v, &t)) fail(w, n, "expected none, host or device, got '" + v + "'");
  return t;
}

LoadSource parse_source(const YAML::Node& n, const Where& w) {
  const std::string v = as_string(n, w);
  LoadSource source;
  if (!parse_load_source(v, &source))
    fail(w, n, "expected file, file-cold, store, store-cold or store-sibling, got '" + v + "'");
  return source;
}

// `machine:` profile | costs-only | {without: [TERM, ...]}.
MachineSection parse_machine(const YAML::Node& n, const Where& w) {
  MachineSection m;
  const std::string expected = "expected profile, costs-only or {without: [TERM, ...]}";
  if (n.IsScalar()) {
    const std::string v = as_string(n, w);
    if (v == "costs-only")
      for (const std::string& t : MachineSection::term_names()) *m.term(t) = false;
    else if (v != "profile")
      fail(w, n, expected + ", got '" + v.substr(0, 64) + "'");
    return m;
  }
  if (!n.IsMap()) fail(w, n, expected);
  check_keys(n, w, {"without"});
  const YAML::Node& without = n["without"];
  if (!without) fail(w, n, expected);
  if (!without.IsSequence()) fail(w.child("without"), without, "expected a list of terms");
  for (size_t i = 0; i < without.size(); ++i) {
    const std::string t = as_string(without[i], w.child("without").child(std::to_string(i)));
    bool* on = m.term(t);
    if (!on) {
      std::string known;
      for (const std::string& k : MachineSection::term_names()) known += (known.empty() ? "" : ", ") + k;
      fail(w.child("without"), without[i], "unknown term '" + t.substr(0, 64) + "' (known: " + known + ")");
    }
    *on = false;
  }
  return m;
}

// The switches of each term that `machine:` replaced: a clear error that says so.
void refuse_term_switches(const YAML::Node& n, const Where& w) {
  for (const std::string& t : MachineSection::term_names())
    if (n[t])
      fail(w.child(t), n[t], "the simulated machine is named as a whole: write machine: "
                             "{without: [" + t + "]} (or machine: profile | costs-only)");
}

// The machine-speed knobs: cost_scale, speed_trace, jitter, noise, machine.
void parse_speed(const YAML::Node& n, const Where& w, SimulationSection& s) {
  if (const YAML::Node& v = n["cost_scale"]) {
    s.cost_scale = as_double(v, w.child("cost_scale"));
    if (!(s.cost_scale > 0) || !std::isfinite(s.cost_scale))
      fail(w.child("cost_scale"), v, "expected a positive number");
  }
  if (n["speed_trace"]) s.speed_trace = parse_speed_trace(n["speed_trace"], w.child("speed_trace"));
  if (const YAML::Node& v = n["jitter"]) {
    s.jitter = as_double(v, w.child("jitter"));
    if (!(s.jitter >= 0) || !std::isfinite(s.jitter))
      fail(w.child("jitter"), v, "expected a relative standard deviation >= 0");
  }
  if (n["noise"]) s.noise = parse_noise(n["noise"], w.child("noise"));
  if (n["machine"]) s.machine = parse_machine(n["machine"], w.child("machine"));
}

// client_timeout_s (> 0, or none) and cancel_delay_s (>= 0).
void parse_cancellation(const YAML::Node& n, const Where& w, SimulationSection& s) {
  if (const YAML::Node& t = n["client_timeout_s"]; t && !is_none(t))
    s.client_timeout = positive_seconds(t, w.child("client_timeout_s"), false);
  if (const YAML::Node& d = n["cancel_delay_s"])
    s.cancel_delay = positive_seconds(d, w.child("cancel_delay_s"), true);
}

YAML::Node emit_machine(const MachineSection& m) {
  if (m.all()) return YAML::Node("profile");
  if (m.none()) return YAML::Node("costs-only");
  YAML::Node without;
  MachineSection copy = m;
  for (const std::string& t : MachineSection::term_names())
    if (!*copy.term(t)) without.push_back(t);
  without.SetStyle(YAML::EmitterStyle::Flow);
  YAML::Node n;
  n["without"] = without;
  return n;
}

}  // namespace

const std::vector<std::string>& MachineSection::term_names() {
  static const std::vector<std::string> names = {"speed_drift", "idle_slowdown", "served_extra",
                                                 "served_miss", "idle_intake"};
  return names;
}

bool* MachineSection::term(const std::string& name) {
  if (name == "speed_drift") return &speed_drift;
  if (name == "idle_slowdown") return &idle_slowdown;
  if (name == "served_extra") return &served_extra;
  if (name == "served_miss") return &served_miss;
  if (name == "idle_intake") return &idle_intake;
  return nullptr;
}

SimulationSection parse_simulation_section(const YAML::Node& n, const Where& w) {
  SimulationSection s;
  if (!n) return s;
  require_map(n, w);
  refuse_term_switches(n, w);
  check_keys(n, w,
             {"noise", "seed", "preload", "load_source", "max_time_s", "event_list", "io_threads", "cost_scale",
              "speed_trace", "jitter", "machine", "client_timeout_s", "cancel_delay_s",
              "cache_optimum"});
  if (!n.IsMap()) return s;
  parse_speed(n, w, s);
  if (n["seed"]) s.seed = as_uint(n["seed"], w.child("seed"));
  if (n["preload"]) s.preload = parse_preload(n["preload"], w.child("preload"));
  if (n["load_source"]) s.load_source = parse_source(n["load_source"], w.child("load_source"));
  if (const YAML::Node& t = n["max_time_s"]; t && !is_none(t))
    s.max_time = positive_seconds(t, w.child("max_time_s"), true);
  if (const YAML::Node& t = n["io_threads"]) {
    const uint64_t k = as_uint(t, w.child("io_threads"));
    if (k < kIoThreads.lo || k > kIoThreads.hi)
      fail(w.child("io_threads"), t, "must be in 1.." + std::to_string(kIoThreads.hi));
    s.io_threads = uint32_t(k);
  }
  // The name is the simulator's to check (sim::check_names).
  if (n["event_list"]) s.event_list = as_string(n["event_list"], w.child("event_list"));
  if (const YAML::Node& o = n["cache_optimum"])
    s.cache_optimum = as_bool(o, w.child("cache_optimum"));
  parse_cancellation(n, w, s);
  return s;
}

// `cluster.front` other than servelab: a proxy that balances by least outstanding requests
// and knows neither placement nor backups; `c.router` becomes least-outstanding.
void parse_proxy_front(const YAML::Node& n, const Where& w, ClusterSection& c) {
  const std::string& f = c.front;
  if (n["router"] && c.router.name != "least-outstanding")
    fail(w.child("router"), n["router"],
         "the " + f + " front balances by least outstanding requests (" +
             (f == "nginx" ? "least_conn" : "leastconn") +
             "): leave router out or name least-outstanding");
  c.router = PolicySpec{"least-outstanding", {}};
  if (c.placement.name != "everywhere")
    fail(w.child("placement"), n["placement"],
         "the " + f + " front does not know placement: every model must be on every server "
         "(placement: everywhere; or front: servelab)");
  if (c.backups()) {
    const char* key = std::isfinite(c.backup_after) ? "backup_after_s" : "backup_percentile";
    fail(w.child(key), n[key],
         "the " + f + " front sends no backup requests (front: servelab has them)");
  }
}

// `cluster.cores`: a number of cores (1..kMaxServers), `machine` (this machine's) or none.
uint32_t parse_cores(const YAML::Node& n, const Where& w) {
  if (is_none(n)) return 0;
  if (n.IsScalar() && n.Scalar() == "machine") return std::max(1u, std::thread::hardware_concurrency());
  const uint64_t k = as_uint(n, w);
  if (k < 1 || k > kMaxServers)
    fail(w, n, "expected a number of cores in 1.." + std::to_string(kMaxServers) +
                   ", machine (this machine's) or none (a core per worker)");
  return uint32_t(k);
}

// `cluster:` {servers: N, router: NAME or {name, parameters}, placement: NAME or {name,
// parameters}, backup_after_s or backup_percentile, cancel_copies, front, cores}; absent: one
// server. The names and parameters of router and placement are the simulator's to check
// (sim::check_simulator_names, build_setup); the front's are checked here.
ClusterSection parse_cluster_section(const YAML::Node& n, const Where& w) {
  ClusterSection c;
  if (!n) return c;
  require_map(n, w);
  check_keys(n, w, {"servers", "router", "placement", "backup_after_s", "backup_percentile",
                    "cancel_copies", "front", "cores"});
  if (n["servers"]) {
    const uint64_t k = as_uint(n["servers"], w.child("servers"));
    if (k < 1 || k > kMaxServers)
      fail(w.child("servers"), n["servers"], "must be in 1.." + std::to_string(kMaxServers));
    c.servers = uint32_t(k);
  }
  c.router = parse_policy(n["router"], w.child("router"), c.router);
  c.placement = parse_policy(n["placement"], w.child("placement"), c.placement);
  if (const YAML::Node& b = n["backup_after_s"]; b && !is_none(b))
    c.backup_after = positive_seconds(b, w.child("backup_after_s"), true);
  if (const YAML::Node& p = n["backup_percentile"]; p && !is_none(p)) {
    const double v = as_double(p, w.child("backup_percentile"));
    if (!(v > 0 && v <= 100))
      fail(w.child("backup_percentile"), p, "expected a percentile in (0, 100], e.g. 95");
    if (std::isfinite(c.backup_after))
      fail(w.child("backup_percentile"), p,
           "give one backup delay: backup_after_s (seconds) or backup_percentile, not both");
    c.backup_percentile = v;
  }
  if (n["cancel_copies"]) c.cancel_copies = as_bool(n["cancel_copies"], w.child("cancel_copies"));
  if (n["cores"]) c.cores = parse_cores(n["cores"], w.child("cores"));
  if (n["front"]) {
    c.front = as_string(n["front"], w.child("front"));
    if (c.front != "servelab" && c.front != "nginx" && c.front != "haproxy")
      fail(w.child("front"), n["front"], "expected servelab, nginx or haproxy");
    if (c.front != "servelab") parse_proxy_front(n, w, c);
  }
  return c;
}

YAML::Node speed_trace_yaml(const std::vector<SpeedWindow>& trace) {
  YAML::Node t;
  for (const auto& w : trace) {
    YAML::Node pair;
    pair.push_back(w.from);
    pair.push_back(w.factor);
    pair.SetStyle(YAML::EmitterStyle::Flow);
    t.push_back(pair);
  }
  return t;
}

YAML::Node emit_simulation_section(const SimulationSection& s) {
  YAML::Node n;
  n["noise"] = cost_noise_name(s.noise);
  n["seed"] = s.seed;
  n["preload"] = s.preload == Tier::Disk ? "none" : tier_name(s.preload);
  n["load_source"] = load_source_name(s.load_source);
  if (std::isinf(s.max_time)) n["max_time_s"] = "none";
  else n["max_time_s"] = s.max_time;
  n["event_list"] = s.event_list;
  n["io_threads"] = s.io_threads;
  n["cost_scale"] = s.cost_scale;
  if (!s.speed_trace.empty()) n["speed_trace"] = speed_trace_yaml(s.speed_trace);
  if (s.client_timeout < kNever) n["client_timeout_s"] = s.client_timeout;
  n["cancel_delay_s"] = s.cancel_delay;
  if (s.jitter >= 0) n["jitter"] = s.jitter;
  n["machine"] = emit_machine(s.machine);
  if (!s.cache_optimum) n["cache_optimum"] = false;
  return n;
}

YAML::Node emit_cluster_section(const ClusterSection& c) {
  YAML::Node n;
  n["servers"] = c.servers;
  n["router"] = emit_policy(c.router);
  // Written only when set, so a config without it resolves as it always did.
  if (c.placement.name != "everywhere" || !c.placement.params.values().empty())
    n["placement"] = emit_policy(c.placement);
  if (std::isfinite(c.backup_after)) n["backup_after_s"] = c.backup_after;
  if (!std::isnan(c.backup_percentile)) n["backup_percentile"] = c.backup_percentile;
  if (c.backups()) n["cancel_copies"] = c.cancel_copies;
  if (c.front != "servelab") n["front"] = c.front;
  if (c.cores > 0) n["cores"] = c.cores;
  return n;
}

}  // namespace servelab::config
