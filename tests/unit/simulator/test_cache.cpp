// Ground truth for the model cache: LRU miss ratios under the independent reference model
// (uniform: 1 - C/N; Zipf: Che's approximation, solved here by bisection) and sequential
// thrashing. One worker, batching none, one request in flight: hits and misses per batch are
// hits and misses per request.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "sim_test_util.h"

using namespace servelab;
using namespace servelab::sim;

namespace {

double miss_ratio(const SimulationResult& r) {
  return double(r.records.misses) / double(r.records.hits + r.records.misses);
}

SimulationResult run_lru(uint32_t n, uint32_t room, std::vector<uint32_t> models) {
  SimulationSetup s = test::cache_setup(n, room, test::constant_profile(0.001, 0, 0.002));
  SimulationResult r = simulate(s, test::closed_loop(std::move(models)));
  REQUIRE(r.violations.empty());
  REQUIRE(r.lost == 0);
  REQUIRE(r.records.hits + r.records.misses == r.records.requests.size());
  return r;
}

// Che's approximation: T solves sum_i (1 - exp(-p_i T)) = C; miss = sum_i p_i exp(-p_i T).
double che_miss_ratio(const std::vector<double>& p, double c) {
  auto filled = [&](double t) {
    double s = 0;
    for (double x : p) s += 1 - std::exp(-x * t);
    return s;
  };
  double lo = 0, hi = 1;
  while (filled(hi) < c) hi *= 2;
  for (int i = 0; i < 200; ++i) {
    double mid = (lo + hi) / 2;
    (filled(mid) < c ? lo : hi) = mid;
  }
  double t = (lo + hi) / 2, miss = 0;
  for (double x : p) miss += x * std::exp(-x * t);
  return miss;
}

}  // namespace

TEST_CASE("LRU under uniform access misses 1 - C/N", "[simulator][ground-truth][cache]") {
  for (auto [n, c] : {std::pair<uint32_t, uint32_t>{10, 5}, {20, 15}, {5, 4}}) {
    DYNAMIC_SECTION("N " << n << " C " << c) {
      std::vector<double> p(n, 1.0 / n);
      SimulationResult r = run_lru(n, c, test::draw_models(p, 200000, 11 + n));
      double expected = 1 - double(c) / n;
      INFO("miss ratio " << miss_ratio(r) << " expected " << expected);
      CHECK(std::abs(miss_ratio(r) / expected - 1) < 0.01);
    }
  }
}

TEST_CASE("LRU under Zipf matches Che's approximation", "[simulator][ground-truth][cache]") {
  const uint32_t n = 100;
  for (double alpha : {0.8, 1.1}) {
    for (uint32_t c : {10u, 50u}) {
      DYNAMIC_SECTION("alpha " << alpha << " C " << c) {
        std::vector<double> p = test::zipf_probabilities(n, alpha);
        SimulationResult r = run_lru(n, c, test::draw_models(p, 300000, 5));
        double expected = che_miss_ratio(p, c);
        INFO("miss ratio " << miss_ratio(r) << " Che " << expected);
        CHECK(std::abs(miss_ratio(r) / expected - 1) < 0.02);
      }
    }
  }
}

TEST_CASE("LRU thrashes under sequential access with one model too many",
          "[simulator][ground-truth][cache]") {
  std::vector<uint32_t> seq;
  for (int i = 0; i < 1000; ++i) seq.push_back(i % 5);
  SECTION("cold start: every request misses") {
    SimulationSetup s = test::cache_setup(5, 4, test::constant_profile(0.008, 0, 0.09));
    s.preload_tier = Tier::Host;  // nothing on the device
    SimulationResult r = simulate(s, test::closed_loop(seq));
    REQUIRE(r.violations.empty());
    CHECK(r.records.misses == 1000);
    CHECK(r.records.hits == 0);
    for (const auto& q : r.records.requests) {
      REQUIRE(q.waited_for_load);
      REQUIRE(q.finish - q.arrival == Approx(0.098));  // load 90 ms + compute 8 ms
    }
  }
  SECTION("warm start: every request after the four preloaded models misses") {
    SimulationSetup s = test::cache_setup(5, 4, test::constant_profile(0.008, 0, 0.09));
    SimulationResult r = simulate(s, test::closed_loop(seq));
    REQUIRE(r.violations.empty());
    CHECK(r.records.hits == 4);
    CHECK(r.records.misses == 996);
    CHECK(r.records.evictions == 996);  // every miss finds the cache full
  }
}

// Two models, room for one on the device: the second request misses, and its load (50 ms)
// waits for the victim's eviction (5 ms) on the loader, as the engine's loader frees it
// first. Without an eviction cost the load starts at the dispatch.
TEST_CASE("a miss at a full tier waits for the eviction the profile costs",
          "[simulator][ground-truth][cache]") {
  for (double evict : {0.0, 0.005}) {
    CAPTURE(evict);
    ModelProfile p = test::constant_profile(0.010, 0, 0.050);
    p.evict_time[int(Tier::Device)] = evict;
    SimulationResult r = simulate(test::cache_setup(2, 1, p), test::closed_loop({0, 1}));
    REQUIRE(r.violations.empty());
    REQUIRE(r.records.requests.size() == 2);
    const auto& q = r.records.requests[1];
    CHECK(q.waited_for_load);
    CHECK(q.dispatch == Approx(0.010));
    CHECK(q.start == Approx(0.010 + evict + 0.050));
    CHECK(q.finish == Approx(0.010 + evict + 0.050 + 0.010));
  }
}

// Two loads allowed in flight (max_loads_in_flight 2) and both models missing at once: the
// engine has one loader thread, which runs the loads one after the other, so the second
// model's request starts after both loads (100 ms), not alongside the first (50 ms).
TEST_CASE("loads allowed in flight together still queue on the one loader",
          "[simulator][ground-truth][cache]") {
  ModelProfile p = test::constant_profile(0.010, 0, 0.050);
  SimulationSetup s = test::cache_setup(2, 2, p);
  s.control.workers = 2;
  s.control.max_loads_in_flight = 2;
  s.preload_tier = Tier::Host;  // both models start off the device
  workloads::Workload w = test::arrivals({0.0, 0.0});
  w.models = {0, 1};
  SimulationResult r = simulate(s, w);
  REQUIRE(r.violations.empty());
  REQUIRE(r.records.requests.size() == 2);
  std::vector<double> starts;
  for (const auto& q : r.records.requests) {
    CHECK(q.waited_for_load);
    starts.push_back(q.start);
  }
  std::sort(starts.begin(), starts.end());
  CHECK(starts[0] == Approx(0.050));
  CHECK(starts[1] == Approx(0.100));
  CHECK(r.records.requests[0].finish != Approx(r.records.requests[1].finish));
}

// The textbook reference string (Silberschatz, Galvin and Gagne, ch. 9: with 3 frames OPT
// faults 9 times, LRU 12, FIFO 15), run through the simulator one request at a time from a
// cold device: each policy's loads and the optimum the run states beside them.
TEST_CASE("a run states its policy's loads beside the offline optimum of its accesses",
          "[simulator][ground-truth][cache][optimum]") {
  const std::vector<uint32_t> textbook = {7, 0, 1, 2, 0, 3, 0, 4, 2, 3,
                                          0, 3, 2, 1, 2, 0, 1, 7, 0, 1};
  for (auto [policy, loads] : {std::pair<const char*, uint64_t>{"lru", 12}, {"fifo", 15}}) {
    CAPTURE(policy);
    SimulationSetup s = test::cache_setup(8, 3, test::constant_profile(0.008, 0, 0.05));
    s.control.eviction = {policy, {}};
    s.preload_tier = Tier::Host;  // nothing on the device
    SimulationResult r = simulate(s, test::closed_loop(textbook));
    REQUIRE(r.violations.empty());
    REQUIRE(r.records.cache_optimum);
    const results::CacheOptimum& o = *r.records.cache_optimum;
    CHECK(o.tier == "device");
    CHECK(o.accesses == 20);
    CHECK(o.loads == loads);
    CHECK(o.lower == 9);
    CHECK(o.upper == 9);
    const nlohmann::json j = results::summarize(r.records)["cache_optimum"];
    CHECK(j["loads_over_optimum"].get<double>() == Approx(double(loads) / 9));
  }
  SECTION("preloaded models count as held at the start, for the optimum as for the policy") {
    SimulationSetup s = test::cache_setup(8, 3, test::constant_profile(0.008, 0, 0.05));
    SimulationResult r = simulate(s, test::closed_loop({0, 1, 2, 0, 1, 2}));  // 0-2 preloaded
    REQUIRE(r.records.cache_optimum);
    CHECK(r.records.cache_optimum->loads == 0);
    CHECK(r.records.cache_optimum->lower == 0);
  }
  SECTION("not stated where the tier is unlimited or the config turns it off") {
    SimulationSetup s = test::cache_setup(8, 3, test::constant_profile(0.008, 0, 0.05));
    s.cache_optimum = false;
    CHECK_FALSE(simulate(s, test::closed_loop(textbook)).records.cache_optimum);
    s.cache_optimum = true;
    s.control.budgets[int(Tier::Device)].models = UINT32_MAX;
    CHECK_FALSE(simulate(s, test::closed_loop(textbook)).records.cache_optimum);
  }
}
