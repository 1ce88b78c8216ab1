// LoadGen's validity rules on hand-made runs, the Server search on a trial whose valid rates
// are known, and loadgen_summary.txt's lines.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "capacity/loadgen_summary.h"
#include "capacity/scenario.h"
#include "capacity/server_search.h"

using namespace servelab::capacity;
using Catch::Contains;

namespace {

ScenarioSettings server(double bound_s) {
  ScenarioSettings s = default_settings(Scenario::kServer);
  s.target_latency_s = bound_s;
  s.min_duration_s = 10;
  s.min_query_count = 100;
  return s;
}

// n latencies: all `base` except `over` of them at `slow`.
std::vector<double> latencies(size_t n, double base, size_t over, double slow) {
  std::vector<double> v(n, base);
  for (size_t i = 0; i < over; ++i) v[i] = slow;
  return v;
}

}  // namespace

TEST_CASE("server runs: valid only with both minimums, the percentile and early stopping") {
  const ScenarioSettings s = server(0.050);
  CHECK(judge_run(s, latencies(2000, 0.010, 5, 0.2), 20, 100).valid());
  const RunOutcome short_run = judge_run(s, latencies(2000, 0.010, 0, 0), 9.5, 100);
  CHECK_FALSE(short_run.valid());
  CHECK_FALSE(short_run.min_duration_ok);
  const RunOutcome few = judge_run(s, latencies(99, 0.010, 0, 0), 20, 5);
  CHECK_FALSE(few.min_queries_ok);
  // 2% over the bound: the p99 is over it.
  const RunOutcome slow = judge_run(s, latencies(2000, 0.010, 40, 0.2), 20, 100);
  CHECK_FALSE(slow.performance_ok);
  CHECK(slow.overlatency == 40);
  CHECK(slow.percentile_latency_s == 0.2);
  // 0.95% over: the p99 is within the bound, but 19 of 2000 is no evidence at 99% confidence.
  const RunOutcome edge = judge_run(s, latencies(2000, 0.010, 19, 0.2), 20, 100);
  CHECK(edge.performance_ok);
  CHECK_FALSE(edge.early_stopping_ok);
  CHECK(edge.more_queries_needed > 0);
  CHECK_THAT(edge.reasons().back(), Contains("early stopping"));
}

TEST_CASE("single- and multi-stream runs too short for their percentile are invalid") {
  // With none over it, a percentile p is estimated at confidence c from the fewest n with
  // p^n < 1 - c: n = 44 for p90 (0.9^43 = 0.0108, 0.9^44 = 0.0097), 459 for p99.
  const auto fewest = [](double p) {
    return static_cast<size_t>(std::floor(std::log(0.01) / std::log(p))) + 1;
  };
  REQUIRE(fewest(0.90) == 44);
  REQUIRE(fewest(0.99) == 459);
  for (Scenario sc : {Scenario::kSingleStream, Scenario::kMultiStream}) {
    ScenarioSettings s = default_settings(sc);
    s.min_query_count = 5;
    s.min_duration_s = 0;
    const size_t n = fewest(s.target_percentile);
    const RunOutcome short_run = judge_run(s, latencies(n - 1, 0.002, 0, 0), 1, 0);
    CHECK(short_run.min_queries_ok);
    CHECK_FALSE(short_run.valid());
    CHECK(short_run.more_queries_needed == 1);
    REQUIRE_FALSE(short_run.reasons().empty());
    CHECK_THAT(short_run.reasons().back(),
               Contains("not enough queries processed for a") &&
                   Contains("would need at least " + std::to_string(n)));
    CHECK(judge_run(s, latencies(n, 0.002, 0, 0), 1, 0).valid());
  }
  ScenarioSettings multi = default_settings(Scenario::kMultiStream);
  multi.min_query_count = 5;
  multi.min_duration_s = 0;
  const std::string text = loadgen_summary(multi, judge_run(multi, latencies(10, 0.002, 0, 0), 1, 0), "x");
  CHECK_THAT(text, Contains("Result is : INVALID") && Contains("Early stopping satisfied: NO") &&
                       Contains("Reason: not enough queries processed for a 99th percentile"));
  ScenarioSettings off = default_settings(Scenario::kOffline);  // throughput: no percentile
  off.min_query_count = 5;
  off.min_duration_s = 0;
  CHECK(judge_run(off, latencies(10, 0.5, 0, 0), 1, 0).valid());
}

TEST_CASE("the server search brackets and bisects to the highest valid rate") {
  ScenarioSettings s = server(0.050);
  s.start_rate = 7;
  s.search_precision = 0.005;
  const double edge = 123.4;  // valid at or below
  int calls = 0;
  const SearchResult r = search_server_rate(s, [&](double rate) {
    ++calls;
    const size_t n = 2000;
    return judge_run(s, latencies(n, rate <= edge ? 0.010 : 0.100, 0, 0), 20, rate);
  });
  CHECK(r.best_rate <= edge);
  CHECK(r.best_rate >= edge / 1.005);
  CHECK(r.lowest_invalid > edge);
  CHECK(calls == static_cast<int>(r.steps.size()));
  CHECK(r.queries == 2000u * r.steps.size());
  CHECK(calls < 20);  // 5 doublings to bracket, then about 8 halvings of a 2x bracket
}

TEST_CASE("the server search reports no rate when none is valid") {
  ScenarioSettings s = server(0.050);
  s.max_trials = 12;
  const SearchResult r = search_server_rate(
      s, [&](double rate) { return judge_run(s, latencies(500, 1.0, 0, 0), 20, rate); });
  CHECK(r.best_rate == 0);
  CHECK(r.steps.size() == 7);  // 10, 5, ..., 0.156: the next, 0.078, is below the min rate
  CHECK_THAT(loadgen_search_summary(s, r, "sut"), Contains("Result is : INVALID"));
}

TEST_CASE("loadgen_summary.txt has LoadGen's metric line, verdict and settings") {
  ScenarioSettings s = server(0.050);
  const RunOutcome run = judge_run(s, latencies(2000, 0.010, 3, 0.06), 20, 100);
  const std::string text = loadgen_summary(s, run, "servelab-sim");
  CHECK_THAT(text, Contains("Scenario : Server"));
  CHECK_THAT(text, Contains("Scheduled samples per second : 100.00"));
  CHECK_THAT(text, Contains("Result is : VALID"));
  CHECK_THAT(text, Contains("Early stopping satisfied: Yes"));
  CHECK_THAT(text, Contains("99th percentile latency (ns) : 10000000"));
  CHECK_THAT(text, Contains("target_latency (ns): 50000000"));
  ScenarioSettings off = default_settings(Scenario::kOffline);
  CHECK_THAT(loadgen_summary(off, judge_run(off, latencies(1000, 0.5, 0, 0), 2.0, 0), "x"),
             Contains("Samples per second: 500.00"));
  ScenarioSettings single = default_settings(Scenario::kSingleStream);
  CHECK_THAT(loadgen_summary(single, judge_run(single, latencies(10, 0.002, 1, 0.009), 1, 0), "x"),
             Contains("90.0th percentile latency (ns) : 2000000"));
}

TEST_CASE("scenario names and settings are checked") {
  CHECK(parse_scenario("offline") == Scenario::kOffline);
  CHECK(parse_scenario("multi-stream") == Scenario::kMultiStream);
  CHECK(default_settings(Scenario::kMultiStream).target_percentile == 0.99);
  CHECK_THROWS_WITH(parse_scenario("multi"), Contains("single-stream, multi-stream, server, offline"));
  ScenarioSettings s = server(0.05);
  s.target_percentile = 1.0;
  CHECK_THROWS_WITH(validate(s), Contains("percentile"));
}

TEST_CASE("multi-stream queries end at their slowest sample, and a failed or missing one is late") {
  ScenarioSettings s = default_settings(Scenario::kMultiStream);
  s.samples_per_query = 2;
  // Given out of order: query 0 is samples 0-1, query 1 samples 2-3, query 2 only sample 4.
  const std::vector<Sample> samples = {{3, 3.0, 5.5, true}, {0, 0.0, 1.0, true},
                                       {2, 3.0, 4.0, true}, {1, 0.5, 3.0, true},
                                       {4, 6.0, 6.5, true}};
  const std::vector<double> l = query_latencies(s, samples);
  REQUIRE(l.size() == 3);
  CHECK(l[0] == 3.0);  // from its first send (0) to its last answer (3)
  CHECK(l[1] == 2.5);
  CHECK(std::isinf(l[2]));  // cut short: never answered whole
  std::vector<Sample> failed = samples;
  failed[1].ok = false;  // sample 0
  CHECK(std::isinf(query_latencies(s, failed)[0]));
  // Other scenarios: one sample a query.
  CHECK(query_latencies(default_settings(Scenario::kSingleStream), samples).size() == 5);
}
