// Contract tests: every registered policy through the simulator (no in-use eviction, no
// lost or duplicated request, every request completes or times out), and determinism.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/control/policy_registry.h"
#include "results/records.h"
#include "sim_test_util.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
using namespace servelab::sim;

namespace {

void check_contract(const SimulationResult& r, size_t requests) {
  INFO((r.violations.empty() ? std::string("no violations") : r.violations[0]));
  REQUIRE(r.violations.empty());  // the simulator checks in-use evictions and duplicates
  REQUIRE(r.lost == 0);
  REQUIRE(r.records.requests.size() == requests);
  for (const auto& q : r.records.requests) {
    REQUIRE((q.status == RequestStatus::Ok || q.status == RequestStatus::Timeout));
    REQUIRE(q.finish >= q.arrival);
    if (q.status == RequestStatus::Ok) {
      REQUIRE(q.batch_size >= 1);
      REQUIRE(q.batch_size <= 8);
      REQUIRE(q.dispatch >= q.arrival);
    }
  }
}

}  // namespace

TEST_CASE("every registered policy keeps the controller contract", "[simulator][contract]") {
  auto batching = PolicyRegistry::batching_names();
  auto eviction = PolicyRegistry::eviction_names();
  auto scheduling = PolicyRegistry::scheduling_names();
  REQUIRE(!batching.empty());
  REQUIRE(!eviction.empty());
  REQUIRE(!scheduling.empty());
  // Open loop with bursts of load, and closed loop with many in flight.
  workloads::Workload open = test::poisson(3000, 400, 6, 9);
  std::vector<uint32_t> closed_models = test::draw_models(test::zipf_probabilities(6, 0.9), 3000, 4);
  for (const auto& b : batching) {
    for (const auto& e : eviction) {
      for (const auto& s : scheduling) {
        for (Time quantum : {0.0, 0.005}) {
          INFO(b << " + " << e << " + " << s << ", quantum " << quantum);
          SimulationSetup setup = test::contract_setup(quantum);
          setup.control.batching = {b, {}};
          setup.control.eviction = {e, {}};
          setup.control.scheduling = {s, {}};
          check_contract(simulate(setup, open), open.models.size());
          check_contract(simulate(setup, test::closed_loop(closed_models, 16)),
                         closed_models.size());
        }
      }
    }
  }
}

TEST_CASE("same config and seeds give byte-identical requests.csv", "[simulator][determinism]") {
  servelab::testutil::TempDir tmp_dir("servelab-determinism");
  const std::filesystem::path dir = tmp_dir.path();
  auto run = [&](const std::string& file, uint64_t seed) {
    SimulationSetup s = test::contract_setup(0.005);
    s.control.batching = {"rafiqi-ewma", {}};
    s.control.scheduling = {"lru-order", {}};
    s.seed = seed;
    SimulationResult r = simulate(s, test::poisson(5000, 300, 6, 1));
    REQUIRE(r.violations.empty());
    std::string path = (dir / file).string();
    results::write_requests_csv(path, r.records);
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  std::string a = run("a.csv", 17), b = run("b.csv", 17), c = run("c.csv", 18);
  CHECK(a.size() > 100000);
  CHECK(a == b);
  CHECK(a != c);  // the seed matters: noise is on
}

TEST_CASE("two simulations run interleaved on two threads give the same result",
          "[simulator][determinism]") {
  SimulationSetup s = test::contract_setup(0.005);
  workloads::Workload w = test::poisson(2000, 300, 6, 3);
  SimulationResult ref = simulate(s, w);
  SimulationResult x, y;
  std::thread t1([&] { x = simulate(s, w); });
  std::thread t2([&] { y = simulate(s, w); });
  t1.join();
  t2.join();
  for (size_t i = 0; i < ref.records.requests.size(); ++i) {
    REQUIRE(x.records.requests[i].finish == ref.records.requests[i].finish);
    REQUIRE(y.records.requests[i].finish == ref.records.requests[i].finish);
  }
}
