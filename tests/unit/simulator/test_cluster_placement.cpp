// Placement in the simulated cluster: requests go only to their model's hosts (a
// hand-computed schedule), a placement by load reads the schedule's counts, a run's result
// is unchanged by `everywhere`, and groups refuse a partial placement.
#include <catch2/catch.hpp>

#include "simulator/cluster_placement.h"
#include "sim_test_util.h"

using namespace servelab;
using namespace servelab::sim;

namespace {

// Two one-worker servers, batching none; model m0 takes 100 ms, m1 10 ms.
SimulationSetup two_models(const std::string& router) {
  SimulationSetup s = test::cache_setup(2, 2, test::constant_profile(0.010));
  s.models[0].profile = test::constant_profile(0.100);
  s.cluster.servers = 2;
  s.cluster.router = {router, {}};
  return s;
}

workloads::Workload burst(std::vector<uint32_t> models) {
  workloads::Workload w;
  w.models = std::move(models);
  w.send_times.assign(w.models.size(), 0.0);
  return w;
}

}  // namespace

TEST_CASE("a static placement sends each model's requests only to its hosts",
          "[simulator][cluster][placement]") {
  // Requests at t = 0: m0, m1, m1, m0, round-robin. Everywhere: r0 -> server 0 (0..100 ms),
  // r1 -> 1 (0..10), r2 -> 0 (100..110), r3 -> 1 (10..110). With m0 on server 0 and m1 on
  // server 1 only: r0 -> 0 (0..100), r1 -> 1 (0..10), r2 -> 1 (10..20), r3 -> 0 (100..200).
  const workloads::Workload w = burst({0, 1, 1, 0});
  SimulationSetup s = two_models("round-robin");
  SimulationResult all = simulate(s, w);
  REQUIRE(all.violations.empty());
  CHECK(test::finish_times(all) == std::vector<double>{0.100, 0.010, 0.110, 0.110});
  s.cluster.placement = {"static",
                         PolicyParams({{s.models[0].name, "0"}, {s.models[1].name, "1"}})};
  SimulationResult placed = simulate(s, w);
  REQUIRE(placed.violations.empty());
  REQUIRE(placed.lost == 0);
  CHECK(test::finish_times(placed) == std::vector<double>{0.100, 0.010, 0.020, 0.200});
}

TEST_CASE("a placement by load reads the schedule's request counts",
          "[simulator][cluster][placement]") {
  SimulationSetup s = test::cache_setup(3, 3, test::constant_profile(0.010));
  s.cluster.servers = 4;
  s.cluster.placement = {"replicas-by-load", {}};
  // Counts 6, 1, 1 as in tests/unit/route/test_placement.cpp: 4 hosts, then server 0, then 1.
  const workloads::Workload w = burst({0, 0, 1, 0, 0, 2, 0, 0});
  GeneratedSchedule schedule(w);
  const route::Placement p = place_models(s, &schedule);
  CHECK(p.hosts == std::vector<std::vector<uint32_t>>{{0, 1, 2, 3}, {0}, {1}});
  // Without a schedule every model weighs the same: 2 replicas each.
  for (const auto& h : place_models(s, nullptr).hosts) CHECK(h.size() == 2);
  SimulationResult r = simulate(s, w);
  CHECK(r.violations.empty());
  CHECK(r.lost == 0);
}

TEST_CASE("every placement keeps the controller contract on a cluster",
          "[simulator][cluster][placement][contract]") {
  for (const std::string& name : route::placement_names()) {
    DYNAMIC_SECTION(name) {
      SimulationSetup s = test::cache_setup(4, 4, test::constant_profile(0.004, 0.001));
      s.control.batching = {"max-delay", {}};
      s.cluster.servers = 3;
      s.cluster.router = {"least-outstanding", {}};
      PolicyParams params;
      if (name == "static")
        for (size_t i = 0; i < s.models.size(); ++i)
          params.set(s.models[i].name, std::to_string(i % 3));
      s.cluster.placement = {name, params};
      workloads::Workload w = test::poisson(3000, 400, 4, 9);
      SimulationResult a = simulate(s, w), b = simulate(s, w);
      REQUIRE(a.violations.empty());
      REQUIRE(a.lost == 0);
      for (size_t i = 0; i < w.models.size(); ++i) {
        REQUIRE(a.records.requests[i].status == RequestStatus::Ok);
        REQUIRE(a.records.requests[i].finish == b.records.requests[i].finish);
      }
    }
  }
}
