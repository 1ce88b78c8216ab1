#include "cli/simulate_scenario.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>

#include "capacity/loadgen_summary.h"
#include "capacity/server_search.h"
#include "cli/scenario_workloads.h"
#include "results/records.h"
#include "simulator/simulator.h"

namespace servelab::cli {

namespace {

constexpr const char* kSut = "servelab-sim";

// Every request as a scenario judges it (capacity::query_latencies), and the run's span.
class LatencySink final : public results::RecordSink {
 public:
  void add(const results::RequestRecord& r) override {
    first_ = std::min(first_, r.arrival);
    last_ = std::max(last_, r.finish);
    samples_.push_back({r.id, r.arrival, r.finish, r.status == RequestStatus::Ok});
  }
  std::vector<capacity::Sample> take() { return std::move(samples_); }
  double span() const { return samples_.empty() && last_ < first_ ? 0 : last_ - first_; }

 private:
  std::vector<capacity::Sample> samples_;
  double first_ = std::numeric_limits<double>::infinity(), last_ = 0;
};

capacity::RunOutcome simulate_outcome(const sim::SimConfig& cfg,
                                      const workloads::WorkloadSpec& spec,
                                      const capacity::ScenarioSettings& s, double rate) {
  workloads::WorkloadStream stream(spec);
  LatencySink sink;
  sim::simulate(cfg.setup, stream, sink);
  const double span = sink.span();
  return capacity::judge_run(s, capacity::query_latencies(s, sink.take()), span, rate);
}

void report(std::ostream* progress, const capacity::ScenarioSettings& s, double rate,
            const capacity::RunOutcome& o) {
  if (!progress) return;
  *progress << "scenario " << capacity::scenario_name(s.scenario) << ": "
            << (rate > 0 ? "rate " + std::to_string(rate) + " req/s, " : "") << o.queries
            << " queries in " << o.duration_s << " s, p" << s.target_percentile * 100 << " "
            << o.percentile_latency_s * 1e3 << " ms: " << (o.valid() ? "VALID" : "INVALID")
            << "\n";
}

SimScenarioRun run_server(const sim::SimConfig& cfg, const capacity::ScenarioSettings& s,
                          std::ostream* progress) {
  const capacity::SearchResult search = capacity::search_server_rate(s, [&](double rate) {
    capacity::RunOutcome o = simulate_outcome(cfg, poisson_at(cfg.run.workload, s, rate), s, rate);
    report(progress, s, rate, o);
    return o;
  });
  const double shown = search.best_rate > 0 ? search.best_rate
                                            : (search.steps.empty() ? s.start_rate
                                                                    : search.steps.back().rate);
  return {poisson_at(cfg.run.workload, s, shown), capacity::loadgen_search_summary(s, search, kSut),
          search.best_rate > 0};
}

// Runs with the min query count, then as many more as the min duration needs at the rate the
// first run showed.
SimScenarioRun run_counted(const sim::SimConfig& cfg, const capacity::ScenarioSettings& s,
                           std::ostream* progress) {
  uint64_t n = capacity::queries_for(s);
  capacity::RunOutcome o = simulate_outcome(cfg, counted(cfg.run.workload, s, n), s, 0);
  report(progress, s, 0, o);
  for (int i = 0; i < 3 && !o.min_duration_ok && o.completed_rate > 0; ++i) {
    n = static_cast<uint64_t>(std::ceil(1.1 * s.min_duration_s * o.completed_rate)) + 1;
    o = simulate_outcome(cfg, counted(cfg.run.workload, s, n), s, 0);
    report(progress, s, 0, o);
  }
  return {counted(cfg.run.workload, s, n), capacity::loadgen_summary(s, o, kSut), o.valid()};
}

}  // namespace

SimScenarioRun run_sim_scenario(const sim::SimConfig& cfg, const capacity::ScenarioSettings& s,
                                std::ostream* progress) {
  capacity::validate(s);
  return s.scenario == capacity::Scenario::kServer ? run_server(cfg, s, progress)
                                                   : run_counted(cfg, s, progress);
}

}  // namespace servelab::cli
