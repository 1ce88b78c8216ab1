#include "capacity/config_search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <regex>
#include <stdexcept>

namespace servelab::capacity {
namespace {

double value_of(const Candidate& c, const std::string& metric) {
  const auto it = c.metrics.find(metric);
  return it == c.metrics.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

// Whether `a` is at least as good as `b` on throughput and p99 and better on one.
bool dominates(const Candidate& a, const Candidate& b) {
  const double ta = value_of(a, "throughput_rps"), tb = value_of(b, "throughput_rps");
  const double la = value_of(a, "latency_p99_ms"), lb = value_of(b, "latency_p99_ms");
  return ta >= tb && la <= lb && (ta > tb || la < lb);
}

std::vector<Candidate> pareto_of(const std::vector<Candidate>& feasible) {
  std::vector<Candidate> front;
  for (const auto& c : feasible)
    if (std::none_of(feasible.begin(), feasible.end(),
                     [&](const Candidate& o) { return dominates(o, c); }))
      front.push_back(c);
  std::sort(front.begin(), front.end(), [](const Candidate& a, const Candidate& b) {
    return value_of(a, "latency_p99_ms") < value_of(b, "latency_p99_ms");
  });
  return front;
}

// Each constraint no candidate meets, with the value that came closest.
std::vector<std::string> unmet(const std::vector<Candidate>& all,
                               const std::vector<Constraint>& constraints) {
  std::vector<std::string> out;
  for (const auto& k : constraints) {
    if (std::any_of(all.begin(), all.end(), [&](const Candidate& c) { return k.holds(c); }))
      continue;
    double closest = k.at_most ? std::numeric_limits<double>::infinity()
                               : -std::numeric_limits<double>::infinity();
    for (const auto& c : all) {
      const double v = value_of(c, k.metric);
      if (!std::isnan(v)) closest = k.at_most ? std::min(closest, v) : std::max(closest, v);
    }
    out.push_back(k.text + " holds nowhere (" +
                  (std::isfinite(closest) ? "closest " + k.metric + ": " + std::to_string(closest)
                                          : "no run measured " + k.metric) + ")");
  }
  if (out.empty() && !constraints.empty())
    out.push_back("every constraint holds somewhere, but never all at once");
  return out;
}

}  // namespace

bool Constraint::holds(const Candidate& c) const {
  const double v = value_of(c, metric);
  return !std::isnan(v) && (at_most ? v <= bound : v >= bound);
}

std::string metric_named(const std::string& name, const std::vector<std::string>& known) {
  std::string m = name;
  if (m == "throughput") m = "throughput_rps";
  static const std::regex latency_short(R"((mean|max|p50|p80|p90|p99|p999)_ms)");
  if (std::regex_match(m, latency_short)) m = "latency_" + m;
  if (std::find(known.begin(), known.end(), m) == known.end()) {
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw std::invalid_argument("unknown metric '" + name + "' (known: " + list + ")");
  }
  return m;
}

Constraint parse_constraint(const std::string& text, const std::vector<std::string>& known) {
  static const std::regex form(R"(\s*([A-Za-z0-9_]+)\s*(<=|>=)\s*([-+0-9.eE]+)\s*)");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    throw std::invalid_argument("constraint '" + text +
                                "': expected METRIC<=NUMBER or METRIC>=NUMBER");
  Constraint c;
  c.metric = metric_named(m[1], known);
  c.at_most = m[2] == "<=";
  try {
    c.bound = std::stod(m[3]);
  } catch (const std::exception&) {
    throw std::invalid_argument("constraint '" + text + "': '" + m[3].str() + "' is no number");
  }
  if (!std::isfinite(c.bound)) throw std::invalid_argument("constraint '" + text + "': bound");
  c.text = text;
  return c;
}

Constraint with_margin(const Constraint& c, double margin) {
  if (!(margin >= 0 && margin < 1))
    throw std::invalid_argument("a margin must be at least 0 and below 1");
  Constraint t = c;
  const double shift = margin * std::fabs(c.bound);
  t.bound = c.at_most ? c.bound - shift : c.bound + shift;
  if (margin > 0) {
    char text[96];
    std::snprintf(text, sizeof text, " with a margin of %.3g (%s %.6g)", margin,
                  c.at_most ? "<=" : ">=", t.bound);
    t.text = c.text + text;
  }
  return t;
}

SearchOutcome select(const std::vector<Candidate>& all, const std::vector<Constraint>& constraints,
                     const Objective& objective) {
  SearchOutcome out;
  for (const auto& c : all)
    if (std::all_of(constraints.begin(), constraints.end(),
                    [&](const Constraint& k) { return k.holds(c); }) &&
        !std::isnan(value_of(c, objective.metric)))
      out.ranked.push_back(c);
  std::stable_sort(out.ranked.begin(), out.ranked.end(), [&](const Candidate& a, const Candidate& b) {
    const double va = value_of(a, objective.metric), vb = value_of(b, objective.metric);
    return objective.maximize ? va > vb : va < vb;
  });
  out.pareto = pareto_of(out.ranked);
  if (out.ranked.empty()) out.infeasible = unmet(all, constraints);
  return out;
}

std::vector<uint32_t> sample_points(uint64_t space, uint64_t count, uint64_t seed) {
  std::vector<uint32_t> all(space);
  for (uint64_t i = 0; i < space; ++i) all[i] = static_cast<uint32_t>(i);
  if (count >= space) return all;
  std::mt19937_64 rng(seed);  // its sequence is fixed by the standard; the draw below is ours
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t left = space - i;
    const uint64_t j = i + static_cast<uint64_t>((rng() >> 11) * 0x1.0p-53 * static_cast<double>(left));
    std::swap(all[i], all[std::min(j, space - 1)]);
  }
  all.resize(count);
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace servelab::capacity
