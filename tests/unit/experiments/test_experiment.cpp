// Experiment files: sweep grid, per-run config resolution, --set, user-facing errors.
#include <catch2/catch.hpp>

#include "experiments/experiment.h"
#include "experiments/runner.h"

using namespace servelab::experiments;

namespace {
ExperimentSpec parse(const std::string& text) {
  return parse_experiment(YAML::Load(text), "test.yaml");
}
const char* kSpec = R"(
name: t
claim: c
modes: [sim, real]
repetitions: 2
sweep:
  workload.arrival.concurrency: [1, 2, 4]
  policies.batching.name: [none, rafiqi-ewma]
real: {engine: {workers: 2}}
models: [a]
engine: {workers: 1, quantum_ms: 5}
workload: {requests: 10, arrival: {type: closed, concurrency: 1}}
)";
// Over kSpec's points: repetitions {2, 2, 2, 5, 3, 5}.
const char* kMoreRepetitions = R"(
more_repetitions:
  - where: {workload.arrival.concurrency: [2, 4], policies.batching.name: rafiqi-ewma}
    repetitions: 5
  - where: {workload.arrival.concurrency: 4}
    repetitions: 3
)";
}  // namespace

TEST_CASE("the sweep is the cartesian product, first axis outermost") {
  auto spec = parse(kSpec);
  auto points = expand_sweep(spec);
  REQUIRE(points.size() == 6);
  CHECK(points[0].label == "concurrency=1 batching=none");
  CHECK(points[1].label == "concurrency=1 batching=rafiqi-ewma");
  CHECK(points[5].label == "concurrency=4 batching=rafiqi-ewma");
  CHECK(points[5].index == 5);
  CHECK(spec.seeds == std::vector<uint64_t>{1, 2});
}

TEST_CASE("experiment keys stay out of the config - mode overrides and sweep values go in") {
  auto spec = parse(kSpec);
  CHECK_FALSE(spec.base["claim"]);
  CHECK_FALSE(spec.base["sweep"]);
  auto points = expand_sweep(spec);
  YAML::Node sim = resolve_config(spec, points[3], "sim", 7);
  YAML::Node real = resolve_config(spec, points[3], "real", 7);
  CHECK(sim["workload"]["arrival"]["concurrency"].as<int>() == 2);
  CHECK(sim["policies"]["batching"]["name"].as<std::string>() == "rafiqi-ewma");
  CHECK(sim["engine"]["workers"].as<int>() == 1);
  CHECK(real["engine"]["workers"].as<int>() == 2);
  CHECK(real["engine"]["quantum_ms"].as<int>() == 5);  // merged, not replaced
  CHECK(spec.base["workload"]["arrival"]["concurrency"].as<int>() == 1);  // base untouched
}

TEST_CASE("set overrides replace a sweep axis or change the base config") {
  auto spec = parse(kSpec);
  apply_set(spec, "workload.arrival.concurrency=[8, 16]");
  apply_set(spec, "workload.requests=99");
  CHECK(expand_sweep(spec).size() == 4);
  CHECK(spec.base["workload"]["requests"].as<int>() == 99);
  CHECK_THROWS_AS(apply_set(spec, "workload.arrival.concurrency=3"), ExperimentError);
  CHECK_THROWS_AS(apply_set(spec, "novalue"), ExperimentError);
}

TEST_CASE("set with a list where the config holds one value adds a sweep axis") {
  auto spec = parse(kSpec);
  apply_set(spec, "engine.workers=[1, 2, 4]");
  REQUIRE(spec.sweep.size() == 3);
  CHECK(spec.sweep.back().path == "engine.workers");
  CHECK(expand_sweep(spec).size() == 18);
  CHECK(spec.doc["sweep"]["engine.workers"].size() == 3);  // OUT/experiment.yaml says so
  CHECK(spec.base["engine"]["workers"].as<int>() == 1);     // the base keeps its one value
  apply_set(spec, "models=[b]");  // a list where the config holds a list stays a value
  CHECK(spec.sweep.size() == 3);
  CHECK(spec.base["models"][0].as<std::string>() == "b");
  CHECK_THROWS_AS(apply_set(spec, "engine.quantum_ms=[]"), ExperimentError);
}

TEST_CASE("set with a list on a path the config leaves out follows the key's default") {
  auto spec = parse(kSpec);  // no cluster or simulation section, no access weights
  apply_set(spec, "cluster.servers=[1, 2, 3, 4]");  // default one value (1 server): an axis
  REQUIRE(spec.sweep.size() == 3);
  CHECK(spec.sweep.back().path == "cluster.servers");
  CHECK_FALSE(spec.base["cluster"]);
  const auto points = expand_sweep(spec);
  REQUIRE(points.size() == 24);
  CHECK(resolve_config(spec, points[3], "sim", 1)["cluster"]["servers"].as<int>() == 4);
  apply_set(spec, "engine.tiers.host.bytes=[1000, 2000]");  // default unlimited: an axis
  CHECK(spec.sweep.size() == 4);
  // Keys whose value is a list, or that have no default, keep a list as their value.
  apply_set(spec, "simulation.speed_trace=[[0, 1.0], [1, 2.0]]");
  apply_set(spec, "workload.access.weights=[1, 3]");
  CHECK(spec.sweep.size() == 4);
  CHECK(spec.base["simulation"]["speed_trace"].size() == 2);
  CHECK(spec.base["workload"]["access"]["weights"].size() == 2);
}

TEST_CASE("set repetitions and seeds change the experiment, not the base config") {
  auto spec = parse(kSpec);  // repetitions: 2, seeds not given: 1, 2
  apply_set(spec, "repetitions=4");
  CHECK(spec.repetitions == 4);
  CHECK(spec.seeds == std::vector<uint64_t>{1, 2, 3, 4});
  CHECK_FALSE(spec.base["repetitions"]);
  CHECK(spec.doc["repetitions"].as<int>() == 4);  // OUT/experiment.yaml says how it ran
  CHECK(spec.doc["seeds"].size() == 4);
  apply_set(spec, "repetitions=1");
  CHECK(spec.repetitions == 1);
  CHECK(spec.doc["seeds"].size() == 1);
  apply_set(spec, "seeds=[7, 9]");
  CHECK(spec.seeds == std::vector<uint64_t>{7, 9});
  CHECK_THROWS_WITH(apply_set(spec, "repetitions=0"), Catch::Contains("at least 1"));
  CHECK_THROWS_WITH(apply_set(spec, "repetitions=two"), Catch::Contains("wrong type"));
  apply_set(spec, "repetitions=2");
  CHECK_THROWS_WITH(apply_set(spec, "seeds=[5]"), Catch::Contains("fewer seeds"));
}
TEST_CASE("broken experiment files give messages naming the key") {
  CHECK_THROWS_WITH(parse("modes: [gpu]\nmodels: [a]"), Catch::Contains("mode 'gpu'"));
  CHECK_THROWS_WITH(parse("sweep: {a.b: []}"), Catch::Contains("sweep 'a.b'"));
  CHECK_THROWS_WITH(parse("repetitions: 0"), Catch::Contains("repetitions"));
  CHECK_THROWS_WITH(parse("repetitions: 3\nseeds: [1]"), Catch::Contains("seeds"));
  CHECK_THROWS_WITH(parse("seeds: 5"), Catch::Contains("non-empty list"));
  CHECK_THROWS_WITH(parse("sweep: {a..b: [1]}"), Catch::Contains("empty component"));
  CHECK_THROWS_AS(load_experiment("/nonexistent.yaml"), ExperimentError);
}

// Repetitions {2, 2, 2, 5, 3, 5} over six points: rounds 0 and 1 visit all six, round 2 the
// three with more, rounds 3 and 4 the two with five; real before sim within a repetition.
TEST_CASE("runs go in rounds: a point's repetitions are spread over the experiment") {
  auto spec = parse(std::string(kSpec) + kMoreRepetitions);
  const auto points = expand_sweep(spec);
  const auto order = run_order(spec, points, {"real", "sim"});
  std::vector<std::pair<uint32_t, uint32_t>> real;  // (point, repetition) of the real runs
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i].mode != "real") continue;
    real.emplace_back(order[i].point, order[i].repetition);
    REQUIRE(i + 1 < order.size());  // its sim run right after it
    CHECK(order[i + 1] == PlannedRun{order[i].point, order[i].repetition, "sim"});
  }
  using R = std::vector<std::pair<uint32_t, uint32_t>>;
  CHECK(real == R{{0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0},
                  {0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1},
                  {3, 2}, {4, 2}, {5, 2}, {3, 3}, {5, 3}, {3, 4}, {5, 4}});
  CHECK(order.size() == 2 * real.size());
  CHECK(run_order(spec, {}, {"sim"}).empty());
}

TEST_CASE("more repetitions where a rule matches a point's sweep values") {
  auto spec = parse(std::string(kSpec) + kMoreRepetitions);
  std::vector<uint32_t> reps;
  for (const auto& p : expand_sweep(spec)) reps.push_back(repetitions_at(spec, p));
  // Points: (1, none), (1, ewma), (2, none), (2, ewma), (4, none), (4, ewma).
  CHECK(reps == std::vector<uint32_t>{2, 2, 2, 5, 3, 5});
  CHECK(spec.seeds == std::vector<uint64_t>{1, 2, 3, 4, 5});
  apply_set(spec, "repetitions=1");  // every point, rules dropped
  for (const auto& p : expand_sweep(spec)) CHECK(repetitions_at(spec, p) == 1);
  CHECK(spec.doc["seeds"].size() == 1);
  CHECK_FALSE(spec.doc["more_repetitions"]);

  CHECK_THROWS_WITH(parse(std::string(kSpec) + "more_repetitions: [{where: {engine.workers: 2}, "
                                               "repetitions: 4}]"),
                    Catch::Contains("'engine.workers' is not a sweep axis"));
  CHECK_THROWS_WITH(parse(std::string(kSpec) + "more_repetitions: [{repetitions: 4}]"),
                    Catch::Contains("more_repetitions") && Catch::Contains("'where'"));
  CHECK_THROWS_WITH(parse(std::string(kSpec) + "more_repetitions: [{where: "
                                               "{policies.batching.name: none}, repetitions: 0}]"),
                    Catch::Contains("at least 1"));
}

TEST_CASE("skipped grid points are left out and the rest numbered in order") {
  auto spec = parse(std::string(kSpec) +
                    "skip: [{workload.arrival.concurrency: [2, 4], policies.batching.name: none}]");
  const auto points = expand_sweep(spec);
  REQUIRE(points.size() == 4);
  CHECK(points[1].label == "concurrency=1 batching=rafiqi-ewma");
  CHECK(points[2].label == "concurrency=2 batching=rafiqi-ewma");
  CHECK(points[3].label == "concurrency=4 batching=rafiqi-ewma");
  CHECK(points[3].index == 3);
  CHECK_THROWS_WITH(parse(std::string(kSpec) + "skip: [{engine.workers: 2}]"),
                    Catch::Contains("skip") && Catch::Contains("not a sweep axis"));
  CHECK_THROWS_WITH(parse(std::string(kSpec) + "skip: {engine.workers: 2}"),
                    Catch::Contains("skip") && Catch::Contains("list"));
}
