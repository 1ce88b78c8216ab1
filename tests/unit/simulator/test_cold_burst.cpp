// Measured cold bursts: read and written in profiles, drawn per run, and replayed as a closed
// loop's opening burst. Expected intake times and batch splits are worked out by hand from
// the bursts given here.
#include <catch2/catch.hpp>

#include <set>

#include "config/profile_yaml.h"
#include "sim_test_util.h"

using namespace servelab;
using namespace servelab::sim;
using Catch::Matchers::Contains;

namespace {

// Two bursts of 4 and one of 2 (seconds), measured with a constant 10 ms profile without
// overheads.
const ColdBursts kBursts = {
    {0.001, 0.002, 0.003, 0.004}, {0.005, 0.006, 0.007, 0.008}, {0.001, 0.009}};

SimulationSetup setup(uint64_t seed, const ColdBursts& bursts = kBursts,
                      const ModelProfile& p = test::constant_profile(0.010)) {
  SimulationSetup s = test::cache_setup(1, 1, p);
  s.cold_bursts = bursts;
  s.noise = CostNoise::Empirical;  // no batch samples: the constant latency, exactly
  s.seed = seed;
  return s;
}

std::vector<double> queued(const SimulationResult& r, size_t n) {
  std::vector<double> q;
  for (size_t i = 0; i < n; ++i) q.push_back(r.records.requests[i].queued);
  return q;
}

}  // namespace

TEST_CASE("cold bursts are read, written back, scaled and checked", "[simulator][profile]") {
  YAML::Node n = YAML::Load("models: {a: {size_bytes: 1, batch_latency_ms: [{batch: 1, mean: 5}], "
                            "cold_bursts_ms: [[1.5, 2.5], [1, 3, 2]]}}");
  config::ProfileFile p = config::parse_profile_file(n, "p.yaml");
  REQUIRE(p.front_end.cold_bursts.size() == 2);
  CHECK(p.front_end.cold_bursts[1] == std::vector<double>{0.001, 0.003, 0.002});
  config::ProfileFile back = config::parse_profile_file(config::profile_to_yaml(p), "back");
  CHECK(back.front_end.cold_bursts[0][1] == Approx(0.0025));
  back.front_end.scale(2);
  CHECK(back.front_end.cold_bursts[0][1] == Approx(0.005));

  YAML::Node bad = YAML::Load("models: {a: {size_bytes: 1, batch_latency_ms: [{batch: 1, mean: 5}], "
                              "cold_bursts_ms: [[1], []]}}");
  CHECK_THROWS_WITH(config::parse_profile(bad, "p.yaml"),
                    Contains("cold_bursts_ms.1") && Contains("non-empty"));
  bad["models"]["a"]["cold_bursts_ms"] = YAML::Load("[[1, -2]]");
  CHECK_THROWS_WITH(config::parse_profile(bad, "p.yaml"), Contains(">= 0"));
}

TEST_CASE("old per-model cold bursts read into one profile-level list, written back new",
          "[simulator][profile]") {
  // The old form: the probe's bursts copied into every model.
  YAML::Node old = YAML::Load(
      "models: {a: {size_bytes: 1, batch_latency_ms: [{batch: 1, mean: 5}], "
      "request_overhead_ms: {before: 2, after: 1, preprocess: 1}, cold_bursts_ms: [[1, 2]]}, "
      "b: {size_bytes: 1, batch_latency_ms: [{batch: 1, mean: 5}], cold_bursts_ms: [[1, 2]]}}");
  config::ProfileFile p = config::parse_profile_file(old, "old.yaml");
  CHECK(p.front_end.cold_bursts == ColdBursts{{0.001, 0.002}});
  REQUIRE(p.front_end.overhead("a"));
  CHECK(p.front_end.overhead("a")->before == Approx(0.002));
  CHECK(p.front_end.overhead("b") == nullptr);

  YAML::Node out = config::profile_to_yaml(p);
  CHECK(!out["models"]["a"]["cold_bursts_ms"]);
  CHECK(!out["models"]["b"]["cold_bursts_ms"]);
  REQUIRE(out["front_end"]["cold_bursts_ms"].size() == 1);
  CHECK(out["models"]["a"]["request_overhead_ms"]["before"].as<double>() == Approx(2));
  config::ProfileFile back = config::parse_profile_file(out, "new.yaml");
  CHECK(back.front_end.cold_bursts == p.front_end.cold_bursts);

  YAML::Node both = YAML::Clone(old);
  both["front_end"]["cold_bursts_ms"] = YAML::Load("[[3]]");
  CHECK_THROWS_WITH(config::parse_profile_file(both, "both.yaml"),
                    Contains("front_end") && Contains("per model"));
}

TEST_CASE("a cold burst is drawn among the smallest measured size that holds it",
          "[simulator][profile]") {
  FrontEndProfile p;
  p.cold_bursts = kBursts;
  std::mt19937_64 rng(7);
  std::set<std::vector<double>> seen;
  for (int i = 0; i < 50; ++i) seen.insert(p.sample_cold_burst(3, CostNoise::Empirical, rng));
  CHECK(seen == std::set<std::vector<double>>{{0.001, 0.002, 0.003}, {0.005, 0.006, 0.007}});
  CHECK(p.sample_cold_burst(2, CostNoise::Empirical, rng) == std::vector<double>{0.001, 0.009});
  CHECK(p.sample_cold_burst(5, CostNoise::Empirical, rng).empty());  // none that large
  std::mt19937_64 untouched(7), probe(7);
  CHECK(p.sample_cold_burst(3, CostNoise::Normal, probe).empty());  // measured draws only
  CHECK(probe() == untouched());
}

TEST_CASE("a closed loop opens with a measured cold burst", "[simulator]") {
  SECTION("the opening requests reach the controller as the drawn burst did") {
    std::set<std::vector<double>> seen;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      SimulationResult r = simulate(setup(seed), test::closed_loop({0, 0, 0, 0, 0}, 3));
      REQUIRE(r.violations.empty());
      std::vector<double> q = queued(r, 3);
      seen.insert(q);
      CHECK(q == queued(simulate(setup(seed), test::closed_loop({0, 0, 0, 0, 0}, 3)), 3));
      // One worker, no batching, 10 ms each: the first is served as it arrives.
      CHECK(r.records.requests[0].dispatch == q[0]);
      CHECK(r.records.requests[0].finish == Approx(q[0] + 0.010));
      // Later requests are sent at an answer and reach the controller at once.
      CHECK(r.records.requests[3].queued == r.records.requests[3].arrival);
    }
    CHECK(seen == std::set<std::vector<double>>{{0.001, 0.002, 0.003}, {0.005, 0.006, 0.007}});
  }
  SECTION("without measured draws, or a burst larger than measured, nothing is replayed") {
    SimulationSetup s = setup(1);
    s.noise = CostNoise::None;
    CHECK(queued(simulate(s, test::closed_loop({0, 0, 0}, 3)), 3) == std::vector<double>(3, 0));
    s.noise = CostNoise::Empirical;
    CHECK(queued(simulate(s, test::closed_loop({0, 0, 0, 0, 0}, 5)), 5) ==
          std::vector<double>(5, 0));
  }
  SECTION("the first quantum tick splits the burst where the measurement says") {
    // Ticks every 10 ms, everything queued is taken at a tick, 15 ms a batch. Burst
    // {2, 4, 9, 11} ms: the tick at 10 ms takes three; the fourth, queued at 11 ms, waits
    // for the worker (free at 25 ms) and goes alone.
    SimulationSetup s = setup(1, {{0.002, 0.004, 0.009, 0.011}}, test::constant_profile(0.015));
    s.control.quantum = 0.010;
    s.control.batching = {"max-delay", {}};
    s.control.max_batch = 8;
    SimulationResult r = simulate(s, test::closed_loop({0, 0, 0, 0}, 4));
    REQUIRE(r.violations.empty());
    for (int i = 0; i < 3; ++i) {
      CHECK(r.records.requests[i].batch_size == 3);
      CHECK(r.records.requests[i].dispatch == Approx(0.010));
      CHECK(r.records.requests[i].finish == Approx(0.025));
    }
    CHECK(r.records.requests[3].batch_size == 1);
    CHECK(r.records.requests[3].dispatch >= 0.025);
  }
}
