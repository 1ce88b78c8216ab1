// Clusters of servers behind a router: hand-computed schedules, a closed-form check (random
// splitting of a Poisson stream gives each server an M/D/1 queue), and a contract pass over
// every registered router.
#include <catch2/catch.hpp>

#include "engine/route/router.h"
#include "sim_test_util.h"

using namespace servelab;
using namespace servelab::sim;
using namespace servelab::route;

namespace {

// `servers` servers of one worker each, one model, batching none, constant service `d`.
SimulationSetup cluster_setup(uint32_t servers, const std::string& router, double d) {
  SimulationSetup s = test::cache_setup(1, 1, test::constant_profile(d));
  s.cluster.servers = servers;
  s.cluster.router = {router, {}};
  return s;
}

workloads::Workload at_times(std::vector<double> times) {
  workloads::Workload w;
  w.send_times = std::move(times);
  w.models.assign(w.send_times.size(), 0);
  return w;
}

double mean_sojourn(const SimulationResult& r) {
  double sum = 0;
  for (const auto& q : r.records.requests) sum += q.finish - q.arrival;
  return sum / double(r.records.requests.size());
}

}  // namespace

TEST_CASE("round-robin spreads a burst over the servers", "[simulator][cluster]") {
  // Four requests at t = 0, 10 ms each, two one-worker servers: requests 0 and 2 go to server
  // 0, 1 and 3 to server 1, so two finish at 10 ms and two at 20 ms (one server: 10..40 ms).
  SimulationResult r = simulate(cluster_setup(2, "round-robin", 0.010), at_times({0, 0, 0, 0}));
  REQUIRE(r.violations.empty());
  REQUIRE(r.lost == 0);
  std::vector<double> finish;
  for (const auto& q : r.records.requests) finish.push_back(q.finish);
  CHECK(finish == std::vector<double>{0.010, 0.010, 0.020, 0.020});
  SimulationResult one = simulate(cluster_setup(1, "round-robin", 0.010), at_times({0, 0, 0, 0}));
  CHECK(one.records.requests[3].finish == Approx(0.040));
}

TEST_CASE("least-outstanding sends work to the idle server", "[simulator][cluster]") {
  // Two servers; model 0 takes 100 ms, model 1 10 ms. Request 0 (model 0, t=0) goes to server
  // 0 under both routers and holds it until 100 ms; request 1 (model 1, t=1 ms) to server 1,
  // done at 11 ms. Request 2 (model 1, t=20 ms): least-outstanding sees server 1 idle and runs
  // it at once (done 30 ms); round-robin's turn is server 0, where it waits until 100 ms.
  auto run = [](const std::string& router) {
    SimulationSetup s = cluster_setup(2, router, 0.010);
    s.models.push_back(s.models[0]);
    s.models[1].name = "m1";
    s.models[0].profile = test::constant_profile(0.100);
    s.control.budgets[int(Tier::Device)].models = 2;
    workloads::Workload w = at_times({0, 0.001, 0.020});
    w.models = {0, 1, 1};
    return simulate(s, w);
  };
  SimulationResult lo = run("least-outstanding"), rr = run("round-robin");
  REQUIRE(lo.violations.empty());
  REQUIRE(rr.violations.empty());
  CHECK(lo.records.requests[0].finish == Approx(0.100));
  CHECK(lo.records.requests[1].finish == Approx(0.011));
  CHECK(lo.records.requests[2].finish == Approx(0.030));
  CHECK(rr.records.requests[2].dispatch == Approx(0.100));
  CHECK(rr.records.requests[2].finish == Approx(0.110));
}

TEST_CASE("random routing of Poisson arrivals gives each server an M/D/1 queue",
          "[simulator][cluster][ground-truth]") {
  // Random splitting of a Poisson stream is Poisson: 4 servers at 100/s in all see 25/s each;
  // with D = 20 ms (rho = 0.5) the mean sojourn is D + rho*D/(2(1-rho)) = 30 ms
  // (Pollaczek-Khinchine). Routers that look at the servers do better: power-of-two and
  // least-outstanding balance the queues, round-robin evens out the arrivals.
  const double D = 0.020, theory = D + 0.5 * D / (2 * (1 - 0.5));
  workloads::Workload w = test::poisson(400000, 100, 1, 5);
  SimulationResult random = simulate(cluster_setup(4, "random", D), w);
  REQUIRE(random.violations.empty());
  REQUIRE(random.lost == 0);
  INFO("random: " << mean_sojourn(random) << " theory " << theory);
  CHECK(std::abs(mean_sojourn(random) / theory - 1) < 0.02);
  double two = mean_sojourn(simulate(cluster_setup(4, "power-of-two", D), w));
  double jsq = mean_sojourn(simulate(cluster_setup(4, "least-outstanding", D), w));
  double rr = mean_sojourn(simulate(cluster_setup(4, "round-robin", D), w));
  INFO("power-of-two " << two << " least-outstanding " << jsq << " round-robin " << rr);
  CHECK(two < 0.9 * theory);
  CHECK(jsq <= two);
  CHECK(rr < theory);
}

TEST_CASE("every router keeps the controller contract and is deterministic",
          "[simulator][cluster][contract]") {
  for (const std::string& name : router_names()) {
    DYNAMIC_SECTION(name) {
      SimulationSetup s = test::cache_setup(4, 2, test::constant_profile(0.004, 0.001));
      s.control.batching = {"max-delay", {}};
      s.control.workers = 2;
      s.cluster.servers = 3;
      s.cluster.router = {name, {}};
      s.noise = CostNoise::Normal;
      for (auto& m : s.models) m.profile.batches[0].stddev = 0.001;
      workloads::Workload w = test::poisson(5000, 400, 4, 9);
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

TEST_CASE("unknown routers and bad parameters are clear errors", "[simulator][cluster]") {
  CHECK_THROWS_WITH(make_router({"nearest", {}}, 1),
                    Catch::Contains("unknown router 'nearest'") &&
                        Catch::Contains("power-of-two"));
  PolicySpec p{"power-of-two", {}};
  p.params.set("choices", "0");
  CHECK_THROWS_WITH(make_router(p, 1), Catch::Contains("choices must be in 1..1024"));
  p.params = {};
  p.params.set("weight", "2");
  CHECK_THROWS_WITH(make_router(p, 1), Catch::Contains("unknown parameter 'weight'"));
}
