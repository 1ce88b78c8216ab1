// Ground truth from queueing theory: M/D/1 through the whole simulator and controller.
// Pollaczek-Khinchine for deterministic service D at load rho: mean wait rho*D/(2*(1-rho)).
#include <catch2/catch.hpp>

#include "sim_test_util.h"

using namespace servelab;
using namespace servelab::sim;

TEST_CASE("M/D/1 mean waiting time matches Pollaczek-Khinchine", "[simulator][ground-truth]") {
  const double D = 0.010;
  struct Case {
    double rho;
    size_t requests;  // enough for a standard error of ~0.5% of the mean wait (by the
                      // autocorrelation of M/D/1 waits, larger at higher load)
  };
  for (Case c : {Case{0.5, 1000000}, Case{0.8, 2000000}}) {
    DYNAMIC_SECTION("rho " << c.rho) {
      SimulationSetup s = test::cache_setup(1, 1, test::constant_profile(D));
      workloads::Workload w = test::poisson(c.requests, c.rho / D, 1, 42);
      SimulationResult r = simulate(s, w);
      REQUIRE(r.violations.empty());
      REQUIRE(r.lost == 0);
      double sum = 0;
      for (const auto& q : r.records.requests) {
        REQUIRE(q.status == RequestStatus::Ok);
        REQUIRE(q.batch_size == 1);
        REQUIRE(q.finish - q.dispatch == Approx(D));
        sum += q.dispatch - q.arrival;
      }
      double mean_wait = sum / r.records.requests.size();
      double theory = c.rho * D / (2 * (1 - c.rho));
      INFO("simulated " << mean_wait << " theory " << theory);
      CHECK(std::abs(mean_wait / theory - 1) < 0.02);
    }
  }
}

TEST_CASE("k workers serve k requests at once", "[simulator]") {
  SimulationSetup s = test::cache_setup(1, 1, test::constant_profile(0.010));
  s.control.workers = 3;
  s.models[0].contexts = 3;
  SimulationResult r = simulate(s, test::closed_loop(std::vector<uint32_t>(300, 0), 3));
  REQUIRE(r.violations.empty());
  // 300 requests, 3 at a time, 10 ms each: 1 s of virtual time.
  CHECK(r.end_time == Approx(1.0));
}
