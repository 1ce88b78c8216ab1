// The `workload:` YAML schema: a full example per type, strict key checking, clear errors,
// and to_yaml round trips.
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include "tests/unit/workloads/test_helpers.h"

using namespace servelab::workloads;
using Catch::Contains;

namespace {
WorkloadSpec parse(const std::string& text, uint32_t num_models = 4) {
  return parse_workload(YAML::Load(text)["workload"], num_models);
}
}  // namespace

TEST_CASE("a full workload section parses into the spec", "[workloads][yaml]") {
  const WorkloadSpec s = parse(R"(
workload:
  requests: 5000
  duration: 120
  arrival: {type: sine, peak_base: 228, period_s: 280, noise: 0.1, interval_s: 0.07, seed: 7}
  access: {type: weights, weights: [1, 2, 3, 4], seed: 9}
)");
  CHECK(s.requests == 5000);
  CHECK(s.duration == 120);
  CHECK(s.num_models == 4);
  CHECK(s.arrival.type == "sine");
  CHECK(s.arrival.peak_base == 228);
  CHECK(s.arrival.period == 280);
  CHECK(s.arrival.noise == 0.1);
  CHECK(s.arrival.interval == 0.07);
  CHECK(s.arrival.seed == 7);
  CHECK(s.access.weights == std::vector<double>{1, 2, 3, 4});
  CHECK(s.access.seed == 9);

  const WorkloadSpec c = parse(R"(
workload:
  requests: 1e4
  warmup: 1.5
  arrival: {type: closed, concurrency: 16, think_time_ms: 250}
  access: {type: zipf, alpha: 0.9}
)");
  CHECK(c.requests == 10000);
  CHECK(c.warmup == 1.5);
  CHECK(generate(c).warmup == 1.5);  // the schedule carries it to the run's records
  CHECK(s.warmup == 0);              // default: every request is summarized
  CHECK(c.arrival.concurrency == 16);
  CHECK(c.arrival.think_time == Approx(0.25));
  CHECK(c.access.alpha == 0.9);
  CHECK(c.arrival.seed == ArrivalSpec{}.seed);  // defaults kept

  // The node may also be the whole document holding only `workload:`.
  const WorkloadSpec t = parse_workload(
      YAML::Load("workload: {arrival: {type: trace, file: a.csv, time_scale: 0.5},"
                 " access: {type: trace, file: b.csv, column: Model}}"),
      3);
  CHECK(t.arrival.trace_file == "a.csv");
  CHECK(t.arrival.time_scale == 0.5);
  CHECK(t.access.trace_column == "Model");
}

TEST_CASE("unknown and misplaced keys are rejected by name", "[workloads][yaml]") {
  CHECK_THROWS_WITH(parse("workload: {requets: 10}"),
                    Contains("workload") && Contains("unknown key 'requets'"));
  CHECK_THROWS_WITH(parse("workload: {requests: 10, arrival: {type: poisson, rat: 5}}"),
                    Contains("workload.arrival") && Contains("'rat'") && Contains("rate"));
  // A key of another type is a mistake too.
  CHECK_THROWS_WITH(parse("workload: {requests: 10, arrival: {type: closed, rate: 5}}"),
                    Contains("unknown key 'rate' for type closed"));
  CHECK_THROWS_WITH(parse("workload: {requests: 10, access: {type: uniform, alpha: 1}}"),
                    Contains("workload.access") && Contains("'alpha'"));
}

TEST_CASE("bad values give messages naming the field", "[workloads][yaml]") {
  CHECK_THROWS_WITH(parse("workload: {requests: 10, arrival: {type: bursty}}"),
                    Contains("workload.arrival.type") && Contains("bursty") &&
                        Contains("poisson"));
  CHECK_THROWS_WITH(parse("workload: {requests: 10, arrival: {rate: 3}}"),
                    Contains("workload.arrival") && Contains("missing 'type'"));
  CHECK_THROWS_WITH(parse("workload: {requests: 10, arrival: {type: poisson, rate: fast}}"),
                    Contains("workload.arrival.rate") && Contains("'fast'"));
  CHECK_THROWS_WITH(parse("workload: {requests: 10, arrival: {type: poisson, rate: -2}}"),
                    Contains("rate must be a positive number"));
  CHECK_THROWS_WITH(parse("workload: {requests: -3}"),
                    Contains("workload.requests") && Contains("non-negative integer"));
  CHECK_THROWS_WITH(parse("workload: {requests: 10, arrival: {type: closed, concurrency: 0}}"),
                    Contains("concurrency"));
  CHECK_THROWS_WITH(parse("workload: {requests: 10, access: {type: weights, weights: [1, 2]}}"),
                    Contains("weights has 2 entries but there are 4 models"));
  CHECK_THROWS_WITH(parse("workload: {requests: 10, access: {type: zipf, alpha: 0}}"),
                    Contains("alpha must be a positive number"));
  CHECK_THROWS_WITH(parse("workload: {requests: 10, access: {type: trace, file: x.csv}}"),
                    Contains("needs 'column'"));
  CHECK_THROWS_WITH(parse("workload: {requests: 0, arrival: {type: poisson, rate: 5}}"),
                    Contains("need 'requests' or 'duration'"));
  CHECK_THROWS_WITH(parse("workload: {requests: 0, arrival: {type: closed}}"),
                    Contains("at least 1 for closed-loop"));
  CHECK_THROWS_WITH(parse("workload: {requests: 10, warmup: -1}"),
                    Contains("workload.warmup") && Contains("non-negative"));
  CHECK_THROWS_WITH(parse("workload: {requests: 10}", 0), Contains("no models"));
  CHECK_THROWS_WITH(parse("workload: [1, 2]"), Contains("expected a mapping"));
}

TEST_CASE("to_yaml round-trips through parse_workload", "[workloads][yaml]") {
  for (const char* text : {
           "workload: {requests: 7, duration: 3.5, arrival: {type: poisson, rate: 12.5, seed: 3},"
           " access: {type: pareto, alpha: 1.3, seed: 11}}",
           "workload: {requests: 9, warmup: 0.25,"
           " arrival: {type: closed, concurrency: 4, think_time_ms: 20},"
           " access: {type: weights, weights: [0.5, 1, 0, 2]}}",
           "workload: {duration: 60, arrival: {type: sine, peak_base: 272, period_s: 280},"
           " access: {type: sequential}}",
       }) {
    CAPTURE(text);
    const WorkloadSpec a = parse(text);
    const std::string emitted = to_yaml(a);
    CAPTURE(emitted);
    const WorkloadSpec b = parse(emitted);
    CHECK(to_yaml(b) == emitted);
    CHECK(b.requests == a.requests);
    CHECK(b.warmup == a.warmup);
    CHECK(b.arrival.type == a.arrival.type);
    CHECK(b.access.type == a.access.type);
    CHECK(b.access.weights == a.access.weights);
    CHECK(b.arrival.think_time == Approx(a.arrival.think_time));
    CHECK(generate(a).models == generate(b).models);
  }
}
