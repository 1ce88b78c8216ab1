// Private weights (engine.weights: private, TrIMS's no-sharing baseline): every batch
// first loads its own copy of its model from disk on the server's FIFO loader, then computes.
// Hand-computed schedules, against the same requests with the model shared.
#include <catch2/catch.hpp>

#include <cmath>

#include <yaml-cpp/yaml.h>

#include "config/yaml_util.h"
#include "simulator/sim_config.h"
#include "sim_test_util.h"

using namespace servelab;
using namespace servelab::sim;
using Catch::Matchers::Contains;

namespace {

// One model: 10 ms disk->host, 1 ms host->device (11 ms from disk), `compute` a batch of 1;
// every tier unlimited and the model preloaded on the device; as many of its batches may run
// at once as there are workers (functions of their own).
SimulationSetup faas(uint32_t workers, double compute, bool private_loads) {
  SimulationSetup s = test::cache_setup(1, UINT32_MAX, test::constant_profile(compute));
  s.control.workers = workers;
  s.models[0].contexts = workers;
  s.private_loads = private_loads;
  return s;
}

}  // namespace

TEST_CASE("private weights load a model from disk for every batch", "[simulator][private]") {
  // Closed loop, one in flight: shared, 4 ms each; private, 11 ms of load and 4 of compute.
  const auto loop = test::closed_loop({0, 0, 0});
  CHECK(test::clean_finish_times(simulate(faas(1, 0.004, false), loop)) ==
        std::vector<double>{0.004, 0.008, 0.012});
  const SimulationResult r = simulate(faas(1, 0.004, true), loop);
  CHECK(test::clean_finish_times(r) == std::vector<double>{0.015, 0.030, 0.045});
  REQUIRE(r.records.requests.size() == 3);
  // Each row, as the engine answers it: a load wait (dispatch to start) of 11 ms, then 4 ms.
  for (const auto& q : r.records.requests) {
    CHECK(q.waited_for_load);
    CHECK(q.start - q.dispatch == Approx(0.011).margin(1e-9));
    CHECK(q.finish - q.start == Approx(0.004).margin(1e-9));
  }
}

TEST_CASE("private loads of concurrent batches queue on the one loader", "[simulator][private]") {
  // Two workers, both requests at 0: loads 0-11 and 11-22 ms, each then computes 4 ms.
  CHECK(test::clean_finish_times(simulate(faas(2, 0.004, true), test::arrivals({0, 0}))) ==
        std::vector<double>{0.015, 0.026});
}

TEST_CASE("private loads then compute on the shared cores", "[simulator][private][cores]") {
  // One core for two workers, 20 ms of compute: r0 computes alone 11-22 ms (11 done), both at
  // half speed from 22: r0's last 9 end at 40 ms, when r1 has 9 of 20 done; alone, r1 ends at 51.
  SimulationSetup s = faas(2, 0.020, true);
  s.cluster.cores = 1;
  CHECK(test::clean_finish_times(simulate(s, test::arrivals({0, 0}))) == std::vector<double>{0.040, 0.051});
}

TEST_CASE("private weights are named in the config and need unbounded, preloaded tiers",
          "[simulator][private][config]") {
  const std::string dir = std::string(SERVELAB_SOURCE_DIR) + "/experiments/rafiqi";
  const std::string base = "profile: ../profiles/rafiqi-caffenet.yaml\nmodels: [caffenet]\n"
                           "workload: {requests: 1}\n";
  auto err = [&](const std::string& text) {
    try {
      parse_sim_config(YAML::Load(text), "s.yaml", dir);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string device = "engine: {exec_tier: device, weights: private}\n";
  CHECK(parse_sim_config(YAML::Load(base + device), "s.yaml", dir).setup.private_loads);
  CHECK_FALSE(parse_sim_config(YAML::Load(base + "engine: {exec_tier: device}"), "s.yaml", dir)
                  .setup.private_loads);
  CHECK_THAT(err(base + "engine: {weights: pooled}"),
             Contains("engine.weights") && Contains("shared or private"));
  CHECK_THAT(err(base + "engine: {exec_tier: device, weights: private, "
                        "tiers: {device: {models: 1}}}"),
             Contains("engine.tiers.device") && Contains("unlimited"));
  CHECK_THAT(err(base + device + "simulation: {preload: host}"),
             Contains("simulation.preload") && Contains("device"));
  CHECK_THAT(err(base + "simulation: {weights: private}"), Contains("weights"));
}
