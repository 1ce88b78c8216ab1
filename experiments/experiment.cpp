// Experiment files: parsing, sweep expansion, per-run config resolution.
#include "experiments/experiment.h"

#include <algorithm>

#include "config/run_config.h"
#include "config/yaml_util.h"

namespace servelab::experiments {
namespace {

// The experiment's own keys (config/run_config.h), plus the name and description, which
// describe the experiment rather than each of its runs.
bool is_own_key(const std::string& key) {
  return config::is_experiment_key(key) || key == "name" || key == "description";
}

std::vector<std::string> split_path(const std::string& dotted) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    parts.push_back(dotted.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  for (const auto& p : parts)
    if (p.empty()) throw ExperimentError("bad config path '" + dotted + "' (empty component)");
  return parts;
}

bool is_index(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// The short name of a sweep path in labels: its last component, or the one before when the
// last is a generic key (policies.eviction.name -> eviction).
std::string axis_label(const std::string& path) {
  auto parts = split_path(path);
  const std::string& last = parts.back();
  if ((last == "name" || last == "type") && parts.size() > 1) return parts[parts.size() - 2];
  return last;
}

template <typename T>
T scalar_as(const YAML::Node& n, const std::string& file, const std::string& key) {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw ExperimentError(file + ": '" + key + "' has a value of the wrong type");
  }
}

uint32_t parse_repetitions(const YAML::Node& n, const std::string& where) {
  const int64_t r = scalar_as<int64_t>(n, where, "repetitions");
  if (r < 1) throw ExperimentError(where + ": 'repetitions' must be at least 1");
  if (r > kMaxRepetitions)
    throw ExperimentError(where + ": 'repetitions' must be at most " +
                          std::to_string(kMaxRepetitions) + " (the limit), got " +
                          std::to_string(r));
  return static_cast<uint32_t>(r);
}

void set_repetitions(ExperimentSpec& spec, const YAML::Node& n, const std::string& where) {
  spec.repetitions = parse_repetitions(n, where);
}

void set_seeds(ExperimentSpec& spec, const YAML::Node& n, const std::string& where) {
  if (!n.IsSequence() || n.size() == 0)
    throw ExperimentError(where + ": 'seeds' needs a non-empty list [1, 2, ...]");
  if (n.size() > kMaxRepetitions)
    throw ExperimentError(where + ": 'seeds' lists more than " + std::to_string(kMaxRepetitions) +
                          " seeds (the limit on repetitions)");
  spec.seeds.clear();
  for (const auto& s : n) spec.seeds.push_back(scalar_as<uint64_t>(s, where, "seeds"));
  if (spec.seeds.size() < spec.repetitions)
    throw ExperimentError(where + ": 'seeds' lists fewer seeds than 'repetitions' (" +
                          std::to_string(spec.repetitions) + ")");
}

uint32_t most_repetitions(const ExperimentSpec& spec) {
  uint32_t most = spec.repetitions;
  for (const auto& rule : spec.more_repetitions) most = std::max(most, rule.repetitions);
  return most;
}

// Repetitions without a seed of their own get 1, 2, ... by position.
void complete_seeds(ExperimentSpec& spec) {
  const uint32_t most = most_repetitions(spec);
  for (uint64_t r = spec.seeds.size(); r < most; ++r) spec.seeds.push_back(r + 1);
}

// {AXIS: VALUE or [VALUES], ...}: every path must be a sweep axis.
PointMatch parse_point_match(const ExperimentSpec& spec, const YAML::Node& n,
                             const std::string& where) {
  PointMatch match;
  for (const auto& kv : n) {
    const auto path = kv.first.as<std::string>();
    if (std::none_of(spec.sweep.begin(), spec.sweep.end(),
                     [&](const SweepAxis& a) { return a.path == path; }))
      throw ExperimentError(where + ": '" + path + "' is not a sweep axis");
    std::vector<YAML::Node> values;
    if (kv.second.IsSequence())
      for (const auto& v : kv.second) values.push_back(v);
    else
      values.push_back(kv.second);
    match.emplace_back(path, std::move(values));
  }
  return match;
}

// Whether `point` has, for each path of `match`, one of its values.
bool matches(const PointMatch& match, const SweepPoint& point) {
  return std::all_of(match.begin(), match.end(), [&](const auto& cond) {
    for (const auto& [path, v] : point.values)
      if (path == cond.first)
        return std::any_of(cond.second.begin(), cond.second.end(),
                           [&](const YAML::Node& x) { return node_text(x) == node_text(v); });
    return false;
  });
}

void set_more_repetitions(ExperimentSpec& spec, const YAML::Node& n, const std::string& file) {
  const std::string where = file + ": more_repetitions";
  if (!n.IsSequence())
    throw ExperimentError(where + ": expected a list of {where: {AXIS: VALUES}, repetitions: N}");
  for (const auto& r : n) {
    if (!r.IsMap() || !r["where"] || !r["where"].IsMap() || !r["repetitions"] || r.size() != 2)
      throw ExperimentError(where + ": each entry needs exactly 'where' (a mapping of sweep "
                                    "axes to values) and 'repetitions'");
    RepetitionRule rule;
    rule.repetitions = parse_repetitions(r["repetitions"], where);
    rule.where = parse_point_match(spec, r["where"], where);
    spec.more_repetitions.push_back(std::move(rule));
  }
}

void set_skip(ExperimentSpec& spec, const YAML::Node& n, const std::string& file) {
  const std::string where = file + ": skip";
  if (!n.IsSequence())
    throw ExperimentError(where + ": expected a list of {AXIS: VALUES} (grid points not to run)");
  for (const auto& m : n) {
    if (!m.IsMap() || m.size() == 0)
      throw ExperimentError(where + ": each entry maps sweep axes to values");
    spec.skip.push_back(parse_point_match(spec, m, where));
  }
}

}  // namespace

std::string node_text(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

YAML::Node get_path(const YAML::Node& root, const std::string& dotted) {
  YAML::Node cur = YAML::Clone(root);
  for (const auto& part : split_path(dotted)) {
    YAML::Node next;
    if (cur.IsSequence() && is_index(part) && std::stoul(part) < cur.size())
      next = cur[std::stoul(part)];
    else if (cur.IsMap() && cur[part])
      next = cur[part];
    else
      return YAML::Node(YAML::NodeType::Undefined);
    cur.reset(next);
  }
  return cur;
}

ExperimentSpec load_experiment(const std::string& file) {
  YAML::Node doc;
  try {
    doc = config::load_file(file);
  } catch (const ConfigError& e) {
    throw ExperimentError(std::string("experiment file: ") + e.what());
  }
  return parse_experiment(doc, file);
}

ExperimentSpec parse_experiment(const YAML::Node& doc, const std::string& file) {
  if (!doc.IsMap()) throw ExperimentError(file + ": expected a mapping at the top level");
  ExperimentSpec spec;
  spec.file = file;
  spec.doc = doc;
  spec.base = YAML::Node(YAML::NodeType::Map);
  for (const auto& kv : doc) {
    std::string key = kv.first.as<std::string>();
    if (!is_own_key(key)) spec.base[key] = YAML::Clone(kv.second);
  }
  spec.name = doc["name"] ? scalar_as<std::string>(doc["name"], file, "name") : "experiment";
  if (doc["sim"]) spec.sim_overrides = doc["sim"];
  if (doc["real"]) spec.real_overrides = doc["real"];
  for (const char* k : {"sim", "real"})
    if (doc[k] && !doc[k].IsMap())
      throw ExperimentError(file + ": '" + k + "' must be a mapping of config overrides");
  if (doc["modes"]) {
    spec.modes.clear();
    for (const auto& m : doc["modes"]) {
      auto mode = scalar_as<std::string>(m, file, "modes");
      if (mode != "sim" && mode != "real")
        throw ExperimentError(file + ": mode '" + mode + "' is not sim or real");
      spec.modes.push_back(mode);
    }
  }
  if (doc["repetitions"]) set_repetitions(spec, doc["repetitions"], file);
  if (doc["seeds"]) set_seeds(spec, doc["seeds"], file);
  if (doc["seed_paths"]) {
    spec.seed_paths.clear();
    for (const auto& p : doc["seed_paths"])
      spec.seed_paths.push_back(scalar_as<std::string>(p, file, "seed_paths"));
  }
  if (doc["sweep"]) {
    if (!doc["sweep"].IsMap())
      throw ExperimentError(file + ": 'sweep' must map config paths to lists of values");
    for (const auto& kv : doc["sweep"]) {
      SweepAxis axis{kv.first.as<std::string>(), {}};
      split_path(axis.path);
      if (!kv.second.IsSequence() || kv.second.size() == 0)
        throw ExperimentError(file + ": sweep '" + axis.path + "' needs a non-empty list");
      for (const auto& v : kv.second) axis.values.push_back(v);
      spec.sweep.push_back(std::move(axis));
    }
  }
  if (doc["more_repetitions"]) set_more_repetitions(spec, doc["more_repetitions"], file);
  if (doc["skip"]) set_skip(spec, doc["skip"], file);
  complete_seeds(spec);
  check_run_count(spec);
  return spec;
}

namespace {

// --set repetitions=N / seeds=[...]: the experiment's own keys, not the base config's.
// repetitions=N holds for every point (more_repetitions is dropped). The document is updated
// too, so that OUT/experiment.yaml says how the experiment was run.
void set_experiment_key(ExperimentSpec& spec, const std::string& key, const std::string& value) {
  const std::string where = "--set " + key;
  YAML::Node v;
  try {
    v = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw ExperimentError(where + ": bad value: " + e.what());
  }
  if (key == "repetitions") {
    set_repetitions(spec, v, where);
    spec.more_repetitions.clear();
    spec.doc.remove("more_repetitions");
  } else {
    set_seeds(spec, v, where);
  }
  complete_seeds(spec);
  spec.doc["repetitions"] = spec.repetitions;
  spec.doc["seeds"] = YAML::Node(YAML::NodeType::Sequence);
  for (uint32_t r = 0; r < most_repetitions(spec); ++r) spec.doc["seeds"].push_back(spec.seeds[r]);
}

// --set PATH=[a, b] where the config holds one value at PATH (engine.max_batch: 32), or leaves
// PATH out and its default is one value (cluster.servers without a cluster section): a new
// sweep axis, innermost, rather than a list written where one value belongs (which would
// fail every run). False where PATH holds no single value or VALUE is not a list.
bool add_sweep_axis(ExperimentSpec& spec, const std::string& path, const std::string& value) {
  YAML::Node v;
  try {
    v = YAML::Load(value);
  } catch (const YAML::Exception&) {
    return false;  // apply_override says what is wrong with it
  }
  YAML::Node current = get_path(spec.base, path);
  if (!current.IsDefined()) current = get_path(config::default_config_tree(), path);
  if (!v.IsSequence() || !current.IsDefined() || !current.IsScalar()) return false;
  if (v.size() == 0)
    throw ExperimentError("--set " + path + ": a sweep axis needs a non-empty list [a, b]");
  SweepAxis axis{path, {}};
  for (const auto& x : v) axis.values.push_back(x);
  spec.sweep.push_back(std::move(axis));
  spec.doc["sweep"][path] = v;
  check_run_count(spec);
  return true;
}

}  // namespace

void apply_set(ExperimentSpec& spec, const std::string& assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ExperimentError("--set expects path=value, got '" + assignment + "'");
  std::string path = assignment.substr(0, eq);
  if (path == "repetitions" || path == "seeds") {
    set_experiment_key(spec, path, assignment.substr(eq + 1));
    return;
  }
  for (auto& axis : spec.sweep) {
    if (axis.path != path) continue;
    YAML::Node v;
    try {
      v = YAML::Load(assignment.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      throw ExperimentError("--set " + path + ": bad value: " + e.what());
    }
    if (!v.IsSequence() || v.size() == 0)
      throw ExperimentError("--set " + path + ": a sweep axis needs a non-empty list [a, b]");
    axis.values.clear();
    for (const auto& x : v) axis.values.push_back(x);
    spec.doc["sweep"][path] = v;  // OUT/experiment.yaml says what ran
    check_run_count(spec);
    return;
  }
  if (add_sweep_axis(spec, path, assignment.substr(eq + 1))) return;
  try {
    config::apply_override(spec.base, assignment);
  } catch (const ConfigError& e) {
    throw ExperimentError(e.what());
  }
}

void check_run_count(const ExperimentSpec& spec) {
  // Saturating products: each factor is at least 1.
  uint64_t runs = std::max<uint64_t>(most_repetitions(spec), 1) * std::max<size_t>(spec.modes.size(), 1);
  std::string axes;
  for (const auto& axis : spec.sweep) {
    axes += (axes.empty() ? "" : " x ") + std::to_string(axis.values.size());
    runs = runs > kMaxRuns ? runs : runs * axis.values.size();
  }
  if (runs <= kMaxRuns) return;
  throw ExperimentError(spec.file + ": sweep: the experiment has more than " +
                        std::to_string(kMaxRuns) + " runs (the limit): " +
                        (axes.empty() ? "1" : axes) + " points x " +
                        std::to_string(most_repetitions(spec)) + " repetitions x " +
                        std::to_string(spec.modes.size()) + " modes");
}

std::vector<SweepPoint> expand_sweep(const ExperimentSpec& spec) {
  check_run_count(spec);
  std::vector<SweepPoint> points{SweepPoint{}};
  for (const auto& axis : spec.sweep) {
    std::vector<SweepPoint> next;
    for (const auto& p : points) {
      for (const auto& v : axis.values) {
        SweepPoint q = p;
        q.values.emplace_back(axis.path, v);
        next.push_back(std::move(q));
      }
    }
    points = std::move(next);
  }
  std::erase_if(points, [&](const SweepPoint& p) {
    return std::any_of(spec.skip.begin(), spec.skip.end(),
                       [&](const PointMatch& m) { return matches(m, p); });
  });
  for (uint32_t i = 0; i < points.size(); ++i) {
    auto& p = points[i];
    p.index = i;
    for (const auto& [path, v] : p.values) {
      if (!p.label.empty()) p.label += " ";
      p.label += axis_label(path) + "=" + node_text(v);
    }
    if (p.label.empty()) p.label = "default";
  }
  return points;
}

uint32_t repetitions_at(const ExperimentSpec& spec, const SweepPoint& point) {
  uint32_t n = spec.repetitions;
  for (const auto& rule : spec.more_repetitions)
    if (matches(rule.where, point)) n = std::max(n, rule.repetitions);
  return n;
}

YAML::Node resolve_config(const ExperimentSpec& spec, const SweepPoint& point,
                          const std::string& mode, uint64_t seed) {
  YAML::Node config = YAML::Clone(spec.base);
  const YAML::Node& over = mode == "real" ? spec.real_overrides : spec.sim_overrides;
  if (over && over.IsMap()) config::merge_into(config, over);
  try {
    for (const auto& [path, v] : point.values) config::apply_override(config, path + "=" + node_text(v));
    for (const auto& path : spec.seed_paths)
      config::apply_override(config, path + "=" + std::to_string(seed));
  } catch (const ConfigError& e) {
    throw ExperimentError(spec.file + ": sweep: " + e.what());
  }
  return config;
}

}  // namespace servelab::experiments
