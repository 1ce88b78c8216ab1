// Servers sharing a machine's cores (cluster.cores): hand-computed schedules of batches (and
// requests' decoding on the servers' IO threads) that share K cores equally, and the processor-sharing queue's closed form: with a server free for
// every request, one core shared by all is M/G/1-PS, whose mean response time E[S] / (1 - rho)
// holds for any service distribution (here a constant).
#include <catch2/catch.hpp>

#include <cmath>

#include "sim_test_util.h"

using namespace servelab;
using namespace servelab::sim;

namespace {

// `servers` one-worker servers of one 10 ms model on `cores` shared cores, round-robin.
SimulationSetup shared(uint32_t servers, uint32_t cores) {
  SimulationSetup s = test::cache_setup(1, 1, test::constant_profile(0.010));
  s.cluster.servers = servers;
  s.cluster.router = {"round-robin", {}};
  s.cluster.cores = cores;
  return s;
}

}  // namespace

TEST_CASE("two batches on one shared core each run at half speed", "[simulator][cores]") {
  // Both start at 0 on servers 0 and 1: 10 ms of work each at speed 1/2 ends both at 20 ms.
  CHECK(test::clean_finish_times(simulate(shared(2, 1), test::arrivals({0, 0}))) ==
        std::vector<double>{0.020, 0.020});
}

TEST_CASE("a batch that starts later slows the running one only from then on",
          "[simulator][cores]") {
  // r0 alone 0..5 ms (5 ms done); both at 1/2 from 5 ms: r0's last 5 ms end at 15 ms, when
  // r1 has done 5 of its 10; r1 alone again finishes at 20 ms.
  CHECK(test::clean_finish_times(simulate(shared(2, 1), test::arrivals({0, 0.005}))) ==
        std::vector<double>{0.015, 0.020});
}

TEST_CASE("three batches on two cores run at two thirds of full speed", "[simulator][cores]") {
  CHECK(test::clean_finish_times(simulate(shared(3, 2), test::arrivals({0, 0, 0}))) ==
        std::vector<double>{0.015, 0.015, 0.015});
}

TEST_CASE("cores at least the workers change nothing", "[simulator][cores]") {
  const std::vector<double> times{0, 0, 0.001, 0.004, 0.012};
  const auto own = test::clean_finish_times(simulate(shared(3, 0), test::arrivals(times)));
  CHECK(test::clean_finish_times(simulate(shared(3, 3), test::arrivals(times))) == own);
  CHECK(test::clean_finish_times(simulate(shared(3, 8), test::arrivals(times))) == own);
  CHECK(own == std::vector<double>{0.010, 0.010, 0.011, 0.020, 0.022});
}

TEST_CASE("decoding on the servers' IO threads shares the cores with the batches",
          "[simulator][cores]") {
  // 10 ms of preprocessing per request (all of `before`), 10 ms batches, one core, two
  // servers, both requests sent at 0. Both decodings at 1/2 speed end at 20 ms; both batches
  // then at 1/2 end at 40 ms. With a core per thread (no cores): 10 ms, then 20 ms.
  SimulationSetup s = shared(2, 1);
  RequestOverhead& o = s.models[0].overhead;
  o.before = o.preprocess = 0.010;
  SimulationResult r = simulate(s, test::arrivals({0, 0}));
  REQUIRE(r.violations.empty());
  for (const auto& q : r.records.requests) {
    CHECK(q.queued == Approx(0.020));
    CHECK(q.finish == Approx(0.040));
  }
  // A decoding that starts while a batch runs slows it from then on: r0 decodes alone 0..10,
  // its batch alone 10..15 (5 of 10 ms done); r1 (sent at 15) decodes beside it at 1/2: r0's
  // batch ends at 25 ms, when r1 has decoded 5 of 10 ms; r1 decodes alone until 30 and its
  // batch ends at 40 ms.
  r = simulate(s, test::arrivals({0, 0.015}));
  REQUIRE(r.violations.empty());
  CHECK(r.records.requests[0].finish == Approx(0.025));
  CHECK(r.records.requests[1].queued == Approx(0.030));
  CHECK(r.records.requests[1].finish == Approx(0.040));
  s.cluster.cores = 0;
  r = simulate(s, test::arrivals({0, 0}));
  for (const auto& q : r.records.requests) CHECK(q.finish == Approx(0.020));
}

TEST_CASE("one core shared by a server per request is M/G/1 processor sharing",
          "[simulator][cores]") {
  // 64 servers, least-outstanding: a request finds an idle server unless 64 are in the system
  // (probability 0.5^64 at rho = 0.5), so every request runs at once on one core shared with
  // the others: mean response E[S] / (1 - rho) = 10 ms / 0.5 = 20 ms.
  SimulationSetup s = shared(64, 1);
  s.cluster.router = {"least-outstanding", {}};
  const SimulationResult r = simulate(s, test::poisson(200000, 50, 1, 7));
  REQUIRE(r.violations.empty());
  double sum = 0;
  for (const auto& q : r.records.requests) sum += q.finish - q.arrival;
  const double mean = sum / double(r.records.requests.size());
  CHECK(mean == Approx(0.020).epsilon(0.03));
  // Without sharing the same requests take their 10 ms each.
  s.cluster.cores = 0;
  const SimulationResult own = simulate(s, test::poisson(20000, 50, 1, 7));
  for (const auto& q : own.records.requests) CHECK(q.finish - q.arrival == Approx(0.010));
}
