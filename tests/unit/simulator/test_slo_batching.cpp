// rafiki-greedy end to end through the simulator: the cost prior comes from the profile,
// tau from the setup's SLO (the requests' deadlines), and the run's summary counts the
// overdue request. The same schedule as the controller test, computed by hand.
#include <catch2/catch.hpp>

#include "results/records.h"
#include "sim_test_util.h"

using namespace servelab;
using namespace servelab::sim;

namespace {

// One model, resident, one worker; c(2) = 0.25 s, c(4) = 0.5 s, no noise.
SimulationSetup greedy_setup() {
  ModelProfile p = test::constant_profile(0.125);
  p.batches = {{2, 0.25, 0, {}}, {4, 0.5, 0, {}}};
  SimulationSetup s = test::cache_setup(1, 1, p);
  s.control.batching = {"rafiki-greedy", PolicyParams({{"batch_sizes", "2,4"}, {"delta", "0.125"}})};
  s.slo = 2.0;
  return s;
}

}  // namespace

// tau = 2, delta = 0.25; due for b = 2: oldest + 2 - 0.25 - 0.25. A queue below min(B) goes
// whole once its head has waited tau; c(1) = 0.125 (the line through c(2) and c(4)).
//   0, 0.5, 1, 1.25: the fourth fills max(B): requests 0-3 run 1.25..1.75
//   1.5: alone until 3.5, then runs 3.5..3.625; 4: alone until 6, runs 6..6.125
// Requests 4 and 5 finish 2.125 s after they arrived: two overdue of six, and none is lost
// although no arrival follows them.
TEST_CASE("rafiki-greedy through the simulator: schedule and overdue count", "[simulator]") {
  SimulationResult r = simulate(greedy_setup(), test::arrivals({0, 0.5, 1, 1.25, 1.5, 4}));
  REQUIRE(r.violations.empty());
  REQUIRE(r.lost == 0);
  const auto& q = r.records.requests;
  REQUIRE(q.size() == 6);
  for (size_t i = 0; i < 4; ++i) {
    INFO("request " << i);
    CHECK(q[i].dispatch == 1.25);
    CHECK(q[i].finish == 1.75);
    CHECK(q[i].batch_size == 4);
  }
  const double dispatch[] = {3.5, 6.0};
  for (size_t i = 4; i < 6; ++i) {
    INFO("request " << i);
    CHECK(q[i].dispatch == dispatch[i - 4]);
    CHECK(q[i].finish == dispatch[i - 4] + 0.125);
    CHECK(q[i].batch_size == 1);
  }
  nlohmann::json s = results::summarize(r.records);
  CHECK(s["overdue"] == 2);
  CHECK(s["slo_attainment"].get<double>() == Approx(4.0 / 6));
}

// Before any batch ran, only the profile knows c(2) = 0.25: two requests at 0 and 0.5 are
// due at 0 + 2 - 0.25 - 0.25 = 1.5 (without the prior c(2) would be 0 and they would wait
// until 1.75).
TEST_CASE("rafiki-greedy in the simulator takes c(b) from the profile", "[simulator]") {
  SimulationResult r = simulate(greedy_setup(), test::arrivals({0, 0.5}));
  REQUIRE(r.records.requests.size() == 2);
  for (const auto& q : r.records.requests) {
    CHECK(q.dispatch == 1.5);
    CHECK(q.finish == 1.75);
  }
}
