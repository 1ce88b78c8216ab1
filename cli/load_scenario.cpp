#include "cli/load_scenario.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>

#include "capacity/loadgen_summary.h"
#include "capacity/server_search.h"
#include "cli/scenario_workloads.h"

namespace servelab::cli {
namespace {

constexpr const char* kSut = "servelab-engine";

// A run's trial: its spec, records and outcome.
struct Trial {
  workloads::WorkloadSpec spec;
  results::RunRecords records;
  loadgen::LoadStats stats;
  capacity::RunOutcome outcome;
};

// Every query's latency (capacity::query_latencies) and the run's span.
capacity::RunOutcome judge(const capacity::ScenarioSettings& s, const results::RunRecords& r,
                           double rate) {
  std::vector<capacity::Sample> samples;
  double first = std::numeric_limits<double>::infinity(), last = 0;
  for (const auto& q : r.requests) {
    first = std::min(first, q.arrival);
    last = std::max(last, q.finish);
    samples.push_back({q.id, q.arrival, q.finish, q.status == RequestStatus::Ok});
  }
  return capacity::judge_run(s, capacity::query_latencies(s, std::move(samples)),
                             r.requests.empty() ? 0 : last - first, rate);
}

Trial run_trial(const loadgen::LoadOptions& options, const workloads::WorkloadSpec& spec,
                const capacity::ScenarioSettings& s, double rate, std::ostream* progress) {
  Trial t{spec, {}, {}, {}};
  t.records = loadgen::run_load(options, workloads::generate(spec), &t.stats);
  t.outcome = judge(s, t.records, rate);
  if (progress)
    *progress << "scenario " << capacity::scenario_name(s.scenario) << ": "
              << (rate > 0 ? "rate " + std::to_string(rate) + " req/s, " : "")
              << t.outcome.queries << " queries in " << t.outcome.duration_s << " s, p"
              << s.target_percentile * 100 << " " << t.outcome.percentile_latency_s * 1e3
              << " ms: " << (t.outcome.valid() ? "VALID" : "INVALID") << "\n";
  return t;
}

LoadScenarioRun reported(Trial t, std::string summary, bool valid) {
  return {std::move(t.spec), std::move(t.records), t.stats, std::move(summary), valid};
}

LoadScenarioRun run_server(const loadgen::LoadOptions& o, const workloads::WorkloadSpec& base,
                           const capacity::ScenarioSettings& s, std::ostream* progress) {
  Trial best, last;
  const capacity::SearchResult search = capacity::search_server_rate(s, [&](double rate) {
    last = run_trial(o, poisson_at(base, s, rate), s, rate, progress);
    if (last.outcome.valid() && rate >= best.outcome.scheduled_rate) best = last;
    return last.outcome;
  });
  const bool found = search.best_rate > 0;
  return reported(found ? std::move(best) : std::move(last),
                  capacity::loadgen_search_summary(s, search, kSut), found);
}

// The min query count first, then as many more as the min duration needs at the rate seen.
LoadScenarioRun run_counted(const loadgen::LoadOptions& o, const workloads::WorkloadSpec& base,
                            const capacity::ScenarioSettings& s, std::ostream* progress) {
  Trial t = run_trial(o, counted(base, s, capacity::queries_for(s)), s, 0, progress);
  for (int i = 0; i < 3 && !t.outcome.min_duration_ok && t.outcome.completed_rate > 0; ++i) {
    const auto n =
        static_cast<uint64_t>(std::ceil(1.1 * s.min_duration_s * t.outcome.completed_rate)) + 1;
    t = run_trial(o, counted(base, s, n), s, 0, progress);
  }
  std::string summary = capacity::loadgen_summary(s, t.outcome, kSut);
  const bool valid = t.outcome.valid();
  return reported(std::move(t), std::move(summary), valid);
}

}  // namespace

LoadScenarioRun run_load_scenario(const loadgen::LoadOptions& options,
                                  const workloads::WorkloadSpec& base,
                                  const capacity::ScenarioSettings& s, std::ostream* progress) {
  capacity::validate(s);
  return s.scenario == capacity::Scenario::kServer ? run_server(options, base, s, progress)
                                                   : run_counted(options, base, s, progress);
}

}  // namespace servelab::cli
