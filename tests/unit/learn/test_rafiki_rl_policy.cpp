// rafiki-rl as a registry policy: a network file picks batch sizes, hand-checked through the
// simulator; bad parameters are refused; the controller contract holds.
#include <catch2/catch.hpp>

#include <random>

#include "engine/control/policy_registry.h"
#include "learn/mlp.h"
#include "learn/rafiki_rl.h"
#include "tests/support/mlp_fixtures.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/simulator/sim_test_util.h"

using namespace servelab;
using namespace servelab::sim;

namespace {

using testutil::constant_choice;

// Random weights (seeded): a policy whose choices depend on the state in no planned way.
learn::Mlp random_net(size_t inputs, size_t actions, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> w(0, 1);
  learn::DenseLayer h{inputs, 8, std::vector<float>(inputs * 8), std::vector<float>(8)};
  learn::DenseLayer o{8, actions, std::vector<float>(8 * actions), std::vector<float>(actions)};
  for (auto* v : {&h.weight, &h.bias, &o.weight, &o.bias})
    for (float& x : *v) x = w(rng);
  return learn::Mlp({h, o});
}

// One model, one worker, c(b) = 0.1 b s, no noise; B = {2, 4}.
SimulationSetup rl_setup(const std::string& weights) {
  ModelProfile p = test::constant_profile(0.1, 0.1);
  SimulationSetup s = test::cache_setup(1, 1, p);
  s.control.batching = {"rafiki-rl", PolicyParams({{"weights", weights}, {"batch_sizes", "2,4"},
                                                   {"queue_features", "4"}})};
  s.slo = 1.0;
  return s;
}

std::vector<uint32_t> batch_sizes(const SimulationResult& r) {
  std::vector<uint32_t> out;
  for (const auto& q : r.records.requests) out.push_back(q.batch_size);
  return out;
}

}  // namespace

// Arrivals 0, 0.05, 0.06, 0.07, 0.08, 0.09 (state size 4 + 2 + 2 = 8). The first runs alone
// 0..0.1 (dispatched now: min(b, queue) = 1). Choosing b = 4, at 0.1 requests 1-4 run
// together until 0.5, then request 5 alone; choosing b = 2, they run as 1-2, 3-4, 5.
TEST_CASE("rafiki-rl dispatches min(b, queue) for the network's batch size", "[learn]") {
  learn::register_policies();
  testutil::TempDir dir("servelab-rl");
  const std::vector<double> at{0, 0.05, 0.06, 0.07, 0.08, 0.09};
  const std::string big = (dir / "big.json").string(), small = (dir / "small.json").string();
  learn::save_mlp(constant_choice(8, 2, 1), big);
  learn::save_mlp(constant_choice(8, 2, 0), small);

  SimulationResult r = simulate(rl_setup(big), test::arrivals(at));
  REQUIRE(r.violations.empty());
  CHECK(batch_sizes(r) == std::vector<uint32_t>{1, 4, 4, 4, 4, 1});
  CHECK(r.records.requests[4].finish == Approx(0.5));
  CHECK(r.records.requests[5].finish == Approx(0.6));

  r = simulate(rl_setup(small), test::arrivals(at));
  REQUIRE(r.violations.empty());
  CHECK(batch_sizes(r) == std::vector<uint32_t>{1, 2, 2, 2, 2, 1});
  CHECK(r.records.requests[2].finish == Approx(0.3));
  CHECK(r.records.requests[4].finish == Approx(0.5));
}

TEST_CASE("rafiki-rl refuses a missing or mismatched network", "[learn]") {
  learn::register_policies();
  testutil::TempDir dir("servelab-rl");
  auto make = [](PolicyParams p) { return PolicyRegistry::batching({"rafiki-rl", p}, ModelInfo{}); };
  CHECK_THROWS_WITH(make(PolicyParams()), Catch::Contains("'weights' is required"));
  CHECK_THROWS_WITH(make(PolicyParams(std::map<std::string, std::string>{{"weights", (dir / "none.json").string()}})),
                    Catch::Contains("cannot open"));
  // Default B has 4 sizes and 64 waiting times: 70 inputs. A 10-input network does not fit.
  const std::string wrong = (dir / "wrong.json").string();
  learn::save_mlp(constant_choice(10, 4, 0), wrong);
  CHECK_THROWS_WITH(make(PolicyParams(std::map<std::string, std::string>{{"weights", wrong}})), Catch::Contains("70"));
  CHECK_THROWS_WITH(make(PolicyParams({{"weights", wrong}, {"beta", "-1"}})),
                    Catch::Contains("beta"));
  CHECK_THROWS_WITH(make(PolicyParams({{"weights", wrong}, {"typo", "1"}})),
                    Catch::Contains("unknown parameter 'typo'"));
  CHECK_FALSE(PolicyRegistry::help("rafiki-rl").empty());
}

// The contract test's setting (six models, room for three, three workers, contexts, noise,
// timeouts, an SLO), with a network whose choices follow the state in no planned way.
TEST_CASE("rafiki-rl keeps the controller contract", "[learn][contract]") {
  learn::register_policies();
  testutil::TempDir dir("servelab-rl");
  const std::string w = (dir / "random.json").string();
  learn::save_mlp(random_net(64 + 2 + 4, 4, 3), w);
  for (Time quantum : {0.0, 0.005}) {
    INFO("quantum " << quantum);
    SimulationSetup s = test::contract_setup(quantum);
    s.control.batching = {"rafiki-rl", PolicyParams(std::map<std::string, std::string>{{"weights", w}})};
    workloads::Workload open = test::poisson(3000, 400, 6, 9);
    SimulationResult r = simulate(s, open);
    INFO((r.violations.empty() ? std::string("no violations") : r.violations[0]));
    REQUIRE(r.violations.empty());
    REQUIRE(r.lost == 0);
    for (const auto& q : r.records.requests) {
      REQUIRE((q.status == RequestStatus::Ok || q.status == RequestStatus::Timeout));
      if (q.status == RequestStatus::Ok) REQUIRE((q.batch_size >= 1 && q.batch_size <= 8));
    }
  }
}
