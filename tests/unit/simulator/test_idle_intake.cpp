// A request that finds its server idle (RequestOverhead::idle_extra, the machine term
// idle_intake): its profile key, the term's switch, and the simulator's use of it. Ground
// truth by hand: one worker, batches of 1 of 20 ms, `before` 2 ms of which `preprocess` 1 ms,
// `after` 0, idle extra 4 ms in full after a 20 ms gap.
#include <catch2/catch.hpp>

#include <filesystem>

#include "config/profile_yaml.h"
#include "simulator/sim_config.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/simulator/knob_test_util.h"
#include "tests/unit/simulator/sim_test_util.h"

using namespace servelab;
using Catch::Matchers::Contains;

namespace {

sim::SimulationSetup idle_setup(double idle_extra) {
  sim::SimulationSetup setup = sim::test::cache_setup(1, 1, sim::test::constant_profile(0.020));
  RequestOverhead& o = setup.models[0].overhead;
  o.before = 0.002;
  o.preprocess = 0.001;
  o.idle_extra = idle_extra;
  return setup;
}

std::vector<double> latencies(const sim::SimulationSetup& setup, std::vector<double> sends) {
  const sim::SimulationResult r = sim::simulate(setup, sim::test::arrivals(std::move(sends)));
  std::vector<double> out;
  for (const auto& q : r.records.requests) out.push_back(q.finish - q.arrival);
  return out;
}

}  // namespace

TEST_CASE("the idle extra ramps with the server's idle gap, none while it holds a request",
          "[simulator]") {
  const std::vector<double> sends = {0.100, 0.130, 0.131, 0.300};
  // 100 ms: idle since the start, 100 ms >= 20: the whole 4 ms: 1 + 4 + 1 + 20 = 26 ms.
  // 130 ms: the batch ended at 126, a 4 ms gap: a fifth of it, 0.8 ms: in at 132.8, done at
  //   152.8 (22.8 ms).
  // 131 ms: the one before is on its way in, the server is not idle: in at 133, behind that
  //   batch: 152.8 to 172.8 (41.8 ms).
  // 300 ms: idle since 172.8: the whole extra again (26 ms).
  const std::vector<double> with = latencies(idle_setup(0.004), sends);
  REQUIRE(with.size() == 4);
  CHECK(with[0] == Approx(0.026));
  CHECK(with[1] == Approx(0.0228));
  CHECK(with[2] == Approx(0.0418));
  CHECK(with[3] == Approx(0.026));
  // Without the term: 1 + 1 + 20 each, the third behind the second (in at 132, done at 152;
  // then 152 to 172: 41 ms).
  const std::vector<double> without = latencies(idle_setup(0), sends);
  REQUIRE(without.size() == 4);
  CHECK(without[0] == Approx(0.022));
  CHECK(without[1] == Approx(0.022));
  CHECK(without[2] == Approx(0.041));
  CHECK(without[3] == Approx(0.022));
}

TEST_CASE("idle_extra in profile files and the machine term idle_intake",
          "[simulator][config]") {
  servelab::testutil::TempDir tmp("servelab-idle-intake");
  const std::filesystem::path dir = tmp.path();
  auto profile = [&](const std::string& extra) { sim::test::write_knob_profile(dir, extra); };
  auto config = [&](const std::string& knob) { return sim::test::knob_config(dir, knob); };
  profile(", idle_extra: 4");
  const config::ProfileFile file = config::load_profile_file((dir / "profile.yaml").string());
  REQUIRE(file.front_end.overhead("m") != nullptr);
  CHECK(file.front_end.overhead("m")->idle_extra == Approx(0.004));
  const config::ProfileFile again = config::parse_profile_file(
      YAML::Load(YAML::Dump(config::profile_to_yaml(file))), "again");
  REQUIRE(again.front_end.overhead("m") != nullptr);
  CHECK(again.front_end.overhead("m")->idle_extra == Approx(0.004));

  // A closed loop of one: the first request finds the server just started (no gap); each
  // later one comes `after` (1 ms) after the server emptied: a twentieth of the extra,
  // 0.2 ms, on 2 + 20 + 1 ms.
  const sim::SimConfig on = config("");
  CHECK(on.setup.models[0].overhead.idle_extra == Approx(0.004));
  const sim::SimulationResult r = sim::simulate(on.setup, workloads::generate(on.run.workload));
  REQUIRE(r.records.requests.size() == 5);
  CHECK(r.records.requests[0].finish - r.records.requests[0].arrival == Approx(0.023));
  for (size_t i = 1; i < r.records.requests.size(); ++i)
    CHECK(r.records.requests[i].finish - r.records.requests[i].arrival == Approx(0.0232));

  const sim::SimConfig off = config(", machine: {without: [idle_intake]}");
  CHECK(off.setup.models[0].overhead.idle_extra == 0);
  CHECK(off.setup.models[0].overhead.before == Approx(0.002));  // the rest stays
  CHECK(off.resolved["simulation"]["machine"]["without"][0].as<std::string>() == "idle_intake");
  CHECK(config(", machine: costs-only").setup.models[0].overhead.idle_extra == 0);
  CHECK_THROWS_WITH(config(", idle_intake: no"),
                    Contains("simulation.idle_intake") && Contains("machine: {without: [idle_intake]}"));

  profile(", idle_extra: -1");
  CHECK_THROWS_WITH(config(""), Contains("request_overhead_ms") &&
                                    Contains("idle_extra must be finite and >= 0"));
}
