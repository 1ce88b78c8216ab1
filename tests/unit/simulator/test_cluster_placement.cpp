// Placement in the simulated cluster: requests go only to their model's hosts and each
// server's share is reported (a hand-computed schedule), a placement by load reads the schedule's counts (a streamed one's
// too), a run's result is unchanged by `everywhere`, and groups refuse a partial placement.
#include <catch2/catch.hpp>

#include <algorithm>

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
  // Each server's share: two requests and batches each; server 0 computed r0 and r2 (110 ms),
  // server 1 r1 and r3 (110 ms).
  REQUIRE(all.servers.size() == 2);
  for (const SimulationResult::ServerShare& share : all.servers) {
    CHECK(share.requests == 2);
    CHECK(share.batches == 2);
    CHECK(share.compute_seconds == Approx(0.110));
  }
  s.cluster.placement = {"static",
                         PolicyParams({{s.models[0].name, "0"}, {s.models[1].name, "1"}})};
  SimulationResult placed = simulate(s, w);
  REQUIRE(placed.violations.empty());
  REQUIRE(placed.lost == 0);
  CHECK(test::finish_times(placed) == std::vector<double>{0.100, 0.010, 0.020, 0.200});
  // Server 0 computed m0's two requests (200 ms), server 1 m1's two (20 ms).
  REQUIRE(placed.servers.size() == 2);
  CHECK(placed.servers[0].requests == 2);
  CHECK(placed.servers[0].compute_seconds == Approx(0.200));
  CHECK(placed.servers[1].requests == 2);
  CHECK(placed.servers[1].compute_seconds == Approx(0.020));
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

namespace {

// Keeps each record's finish time, in id order.
struct Finishes : results::RecordSink {
  std::vector<double> at;
  void add(const results::RequestRecord& r) override { at.push_back(r.finish); }
};

}  // namespace

TEST_CASE("a streamed schedule is placed by load as the generated one is",
          "[simulator][cluster][placement][streaming]") {
  // `servelab simulate` streams its workload: a placement by load must see the same counts
  // (Zipf(1.3) over 6 models: the busiest takes about half of the requests) and so the run
  // the same finish times, bit for bit, as when the schedule is generated whole.
  SimulationSetup s = test::cache_setup(6, 6, test::constant_profile(0.010));
  s.cluster.servers = 6;
  s.cluster.router = {"least-outstanding", {}};
  s.cluster.placement = {"replicas-by-load", {}};
  workloads::WorkloadSpec spec;
  spec.num_models = 6;
  spec.requests = 4000;
  spec.arrival.type = "poisson";
  spec.arrival.rate = 900;
  spec.access.type = "zipf";
  spec.access.alpha = 1.3;
  const workloads::Workload w = workloads::generate(spec);
  workloads::WorkloadStream stream(spec);
  StreamedSchedule streamed_schedule(stream);
  GeneratedSchedule generated_schedule(w);
  const std::vector<double> counts = streamed_schedule.target_counts(6);
  CHECK(counts == generated_schedule.target_counts(6));
  const route::Placement p = place_models(s, &streamed_schedule);
  const size_t busiest = size_t(std::max_element(counts.begin(), counts.end()) - counts.begin());
  CHECK(p.hosts[busiest].size() > 2);  // more than the average of 2 replicas
  CHECK(p.hosts == place_models(s, &generated_schedule).hosts);
  CHECK(p.hosts != place_models(s, nullptr).hosts);  // equal loads place otherwise

  const SimulationResult generated = simulate(s, w);
  REQUIRE(generated.violations.empty());
  Finishes finishes;
  workloads::WorkloadStream fresh(spec);
  const SimulationResult run = simulate(s, fresh, finishes);
  REQUIRE(run.violations.empty());
  REQUIRE(finishes.at.size() == w.models.size());
  for (size_t i = 0; i < w.models.size(); ++i)
    REQUIRE(finishes.at[i] == generated.records.requests[i].finish);
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
