// A miss served one request at a time (RequestOverhead::served_miss_load/batch): its profile
// keys, the simulation section's knob, and where the simulator applies it. Ground truth by
// hand: one worker, batches of 1 of 10 ms, room for one model on the device, a host->device
// load of 30 ms in the cost profile; served, a miss waits 50 ms and its batch costs 25 ms.
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

// Two models (m0 resident, m1 on the host), room for one; the latencies of `models` sent by
// a closed loop of `concurrency`.
std::vector<double> latencies(bool served, std::vector<uint32_t> models, uint32_t concurrency,
                              bool trace = false) {
  sim::SimulationSetup setup =
      sim::test::cache_setup(2, 1, sim::test::constant_profile(0.010, 0, 0.030));
  setup.control.max_batch = 1;
  for (sim::SimModel& m : setup.models) {
    m.overhead.served_miss_load = served ? 0.050 : 0;
    m.overhead.served_miss_batch = served ? 0.025 : 0;
  }
  if (trace) setup.speed_trace = {{0, 1}};
  const sim::SimulationResult r =
      sim::simulate(setup, sim::test::closed_loop(std::move(models), concurrency));
  std::vector<double> out;
  for (const auto& q : r.records.requests) out.push_back(q.finish - q.arrival);
  return out;
}

}  // namespace

TEST_CASE("a miss served from an empty server waits the served load and batch",
          "[simulator]") {
  // One in flight, alternating: every request misses on an empty server, 50 + 25 ms (the
  // batch's 10 ms draw plus the served first batch's 15 ms over it); else 30 + 10 ms.
  for (double t : latencies(true, {1, 0, 1, 0, 1}, 1)) CHECK(t == Approx(0.075));
  for (double t : latencies(false, {1, 0, 1, 0, 1}, 1)) CHECK(t == Approx(0.040));
  // A speed trace gives a real run's own speeds: the profile's costs, as without.
  for (double t : latencies(true, {1, 0, 1}, 1, true)) CHECK(t == Approx(0.040));
}

TEST_CASE("a served miss waits one of its measured waits, at the served mean's level",
          "[simulator]") {
  // Samples of 40 and 60 ms (mean 50) under a served mean of 100 ms: each served miss waits
  // 80 or 120 ms, then computes its 10 ms batch (no first-batch extra). Without noise, or
  // without samples, the served mean itself: 110 ms.
  auto run = [](CostNoise noise, std::vector<double> samples) {
    sim::SimulationSetup setup =
        sim::test::cache_setup(2, 1, sim::test::constant_profile(0.010, 0, 0.030));
    setup.control.max_batch = 1;
    setup.noise = noise;
    for (sim::SimModel& m : setup.models) {
      m.overhead.served_miss_load = 0.100;
      m.overhead.served_miss_batch = 0.010;
      m.overhead.served_miss_load_samples = samples;
    }
    std::vector<uint32_t> models;
    for (int i = 0; i < 200; ++i) models.push_back(uint32_t(1 - i % 2));
    const sim::SimulationResult r = sim::simulate(setup, sim::test::closed_loop(models, 1));
    std::vector<double> out;
    for (const auto& q : r.records.requests) out.push_back(q.finish - q.arrival);
    return out;
  };
  size_t short_waits = 0, long_waits = 0;
  for (double t : run(CostNoise::Empirical, {0.040, 0.060})) {
    const bool is_short = t == Approx(0.090), is_long = t == Approx(0.130);
    CHECK((is_short || is_long));
    short_waits += is_short;
    long_waits += is_long;
  }
  CHECK(short_waits > 60);  // 200 fair draws: 100 each, sd 7
  CHECK(long_waits > 60);
  for (double t : run(CostNoise::None, {0.040, 0.060})) CHECK(t == Approx(0.110));
  for (double t : run(CostNoise::Empirical, {})) CHECK(t == Approx(0.110));
}

TEST_CASE("a miss while the server held requests since the last load costs the profile's",
          "[simulator]") {
  // Two in flight: r0 (m1) misses on the empty server at 0: served, 50 ms, then its batch
  // 25 ms (done at 75); r1 (m1) runs warm, 75-85; r2 (m0), sent at 75, misses with r1 still
  // held since that load: the profile's 30 ms from 85, its batch warm, done at 125 (50 ms).
  const std::vector<double> t = latencies(true, {1, 1, 0}, 2);
  REQUIRE(t.size() == 3);
  CHECK(t[0] == Approx(0.075));
  CHECK(t[1] == Approx(0.085));
  CHECK(t[2] == Approx(0.050));
}

TEST_CASE("served_miss in profile files and the simulation section", "[simulator][config]") {
  servelab::testutil::TempDir tmp("servelab-served-miss");
  const std::filesystem::path dir = tmp.path();
  auto profile = [&](const std::string& miss) { sim::test::write_knob_profile(dir, miss); };
  auto config = [&](const std::string& knob) { return sim::test::knob_config(dir, knob); };
  profile(", served_miss_load: 45, served_miss_batch: 28");
  const config::ProfileFile file = config::load_profile_file((dir / "profile.yaml").string());
  REQUIRE(file.front_end.overhead("m") != nullptr);
  CHECK(file.front_end.overhead("m")->served_miss_load == Approx(0.045));
  CHECK(file.front_end.overhead("m")->served_miss_batch == Approx(0.028));
  const config::ProfileFile again = config::parse_profile_file(
      YAML::Load(YAML::Dump(config::profile_to_yaml(file))), "again");
  REQUIRE(again.front_end.overhead("m") != nullptr);
  CHECK(again.front_end.overhead("m")->served_miss_load == Approx(0.045));
  CHECK(again.front_end.overhead("m")->served_miss_batch == Approx(0.028));
  profile(", served_miss_load: 45, served_miss_load_samples: [40, 50.5]");
  const config::ProfileFile samples = config::parse_profile_file(YAML::Load(YAML::Dump(
      config::profile_to_yaml(config::load_profile_file((dir / "profile.yaml").string())))), "s");
  CHECK(samples.front_end.overhead("m")->served_miss_load_samples ==
        std::vector<double>{0.040, 0.0505});
  profile(", served_miss_load_samples: [40, -1]");
  CHECK_THROWS_WITH(config::load_profile_file((dir / "profile.yaml").string()),
                    Contains("served_miss_load_samples must be finite and >= 0"));
  profile(", served_miss_load_samples: 40");
  CHECK_THROWS_WITH(config::load_profile_file((dir / "profile.yaml").string()),
                    Contains("request_overhead_ms.served_miss_load_samples"));
  profile(", served_miss_load: 45, served_miss_batch: 28");  // for the knob's checks below

  CHECK(config("").setup.models[0].overhead.served_miss_load == Approx(0.045));
  const sim::SimConfig off = config(", machine: {without: [served_miss]}");
  CHECK(off.setup.models[0].overhead.served_miss_load == 0);
  CHECK(off.setup.models[0].overhead.served_miss_batch == 0);
  CHECK(off.setup.models[0].overhead.before == Approx(0.002));  // the rest stays
  CHECK(off.resolved["simulation"]["machine"]["without"][0].as<std::string>() == "served_miss");
  CHECK_THROWS_WITH(config(", served_miss: sometimes"),
                    Contains("simulation.served_miss") && Contains("machine: {without: [served_miss]}"));

  profile(", served_miss_batch: -3");
  CHECK_THROWS_WITH(config(""), Contains("request_overhead_ms") && Contains("served_miss_batch must be"));
}
