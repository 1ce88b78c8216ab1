// Configuration search under an SLO, as pure selection over measured candidates: the
// constraints (`p99_ms<=50` style), the objective, the feasible set, the best, the Pareto
// front of throughput against p99 latency, and why nothing is feasible when nothing is. The
// candidates' numbers come from runs a body made (experiments' runner, wired in cli/); the
// sampling of a large space is here too. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace servelab::capacity {

// One candidate configuration: its label and its metrics (means over its runs), by the
// results index's column names (throughput_rps, latency_p99_ms, slo_attainment, ...).
struct Candidate {
  uint32_t point = 0;
  std::string label;
  std::map<std::string, double> metrics;
};

struct Constraint {
  std::string metric;
  bool at_most = true;  // `<=`; else `>=`
  double bound = 0;
  std::string text;     // as written
  bool holds(const Candidate& c) const;
};

// "latency_p99_ms<=50", "slo_attainment >= 0.99"; also the short forms p50_ms .. p999_ms,
// mean_ms and max_ms for latency_*_ms, and throughput for throughput_rps. Throws
// std::invalid_argument naming the metric when it is not one of `known`.
Constraint parse_constraint(const std::string& text, const std::vector<std::string>& known);
// `c` with its bound moved by `margin` (a fraction of the bound, 0 <= margin < 1) to the safe
// side: METRIC<=X becomes METRIC<=X-margin|X|, METRIC>=X becomes METRIC>=X+margin|X|. A
// planner judges the simulated candidates by it, so that a prediction that errs by up to the
// margin still meets the constraint as written. Throws std::invalid_argument for a margin
// outside [0, 1).
Constraint with_margin(const Constraint& c, double margin);
// The metric a name or short form stands for; throws as parse_constraint does.
std::string metric_named(const std::string& name, const std::vector<std::string>& known);

struct Objective {
  std::string metric = "throughput_rps";
  bool maximize = true;
};

struct SearchOutcome {
  std::vector<Candidate> ranked;        // the feasible ones, best first
  std::vector<Candidate> pareto;        // feasible, not beaten on both throughput and p99
  std::vector<std::string> infeasible;  // when none is feasible: each constraint that no
                                        // candidate meets, with the closest value seen
};

// Ranks the feasible candidates by the objective (ties: fewer of the candidate's index).
SearchOutcome select(const std::vector<Candidate>& all, const std::vector<Constraint>& constraints,
                     const Objective& objective);

// `count` of the indices 0..space-1 drawn without repetition by `seed` (all of them, in order,
// when count >= space), sorted.
std::vector<uint32_t> sample_points(uint64_t space, uint64_t count, uint64_t seed);

}  // namespace servelab::capacity
