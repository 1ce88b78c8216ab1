// A served batch's extra compute (RequestOverhead::served_extra): its profile key, the
// simulation section's knob, and the simulator's use of it. Ground truth by hand: one worker
// serving batches of 1 of cost c + e, requests every T, finishes the i-th at max(arrival, the
// last finish) + c + e.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "config/profile_yaml.h"
#include "simulator/sim_config.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/simulator/knob_test_util.h"
#include "tests/unit/simulator/sim_test_util.h"

using namespace servelab;
using Catch::Matchers::Contains;

namespace {

// One worker, batching none, a 20 ms batch of one, served extra `extra`; requests every
// `spacing` s from `spacing` on. The latencies.
std::vector<double> latencies(double extra, double spacing, bool trace = false) {
  sim::SimulationSetup setup = sim::test::cache_setup(1, 1, sim::test::constant_profile(0.020));
  setup.models[0].overhead.served_extra = extra;
  if (trace) setup.speed_trace = {{0, 1}};
  return sim::test::spaced_latencies(setup, spacing);
}

}  // namespace

TEST_CASE("a served batch costs its model's served extra more", "[simulator]") {
  // Every 50 ms: no queue, each request 20 + 5 ms.
  for (double t : latencies(0.005, 0.050)) CHECK(t == Approx(0.025));
  // Every 10 ms behind 25 ms batches: the i-th (from 1) finishes at 10 + 25 i ms, so waits
  // 10 + 15 i ms in all.
  const std::vector<double> queued = latencies(0.005, 0.010);
  for (size_t i = 0; i < queued.size(); ++i)
    CHECK(queued[i] == Approx((10 + 15.0 * (i + 1)) * 1e-3));
  // A speed trace gives a real run's own speeds, which hold the extra already: not added.
  for (double t : latencies(0.005, 0.050, true)) CHECK(t == Approx(0.020));
}

TEST_CASE("served_extra in profile files and the simulation section", "[simulator][config]") {
  servelab::testutil::TempDir tmp("servelab-served-extra");
  const std::filesystem::path dir = tmp.path();
  auto profile = [&](const std::string& extra) { sim::test::write_knob_profile(dir, extra); };
  auto config = [&](const std::string& knob) { return sim::test::knob_config(dir, knob); };
  profile(", served_extra: 2.5");
  const config::ProfileFile file = config::load_profile_file((dir / "profile.yaml").string());
  REQUIRE(file.front_end.overhead("m") != nullptr);
  CHECK(file.front_end.overhead("m")->served_extra == Approx(0.0025));
  const config::ProfileFile again = config::parse_profile_file(
      YAML::Load(YAML::Dump(config::profile_to_yaml(file))), "again");
  REQUIRE(again.front_end.overhead("m") != nullptr);
  CHECK(again.front_end.overhead("m")->served_extra == Approx(0.0025));

  CHECK(config("").setup.models[0].overhead.served_extra == Approx(0.0025));
  const sim::SimConfig off = config(", machine: {without: [served_extra]}");
  CHECK(off.setup.models[0].overhead.served_extra == 0);
  CHECK(off.setup.models[0].overhead.before == Approx(0.002));  // the rest stays
  CHECK(off.resolved["simulation"]["machine"]["without"][0].as<std::string>() == "served_extra");
  CHECK_THROWS_WITH(config(", served_extra: maybe"),
                    Contains("simulation.served_extra") && Contains("machine: {without: [served_extra]}"));
  // Closed loop of one, nothing else in the way: 2 + 20 + 2.5 + 1 ms per request.
  const sim::SimConfig on = config("");
  const sim::SimulationResult r = sim::simulate(on.setup, workloads::generate(on.run.workload));
  REQUIRE(r.records.requests.size() == 5);
  for (const auto& q : r.records.requests) CHECK(q.finish - q.arrival == Approx(0.0255));

  profile(", served_extra: -1");
  CHECK_THROWS_WITH(config(""), Contains("request_overhead_ms") && Contains("served_extra must be finite and >= 0"));
}
