// The machine's slowdown after idling (calibration/terms/idle_slowdown.h): its interpolation and fit,
// its profile and config keys, and the simulator's use of it. Ground truth by hand: a worker
// that idles g, with the server emptied meanwhile, before a batch of cost c runs it in
// c * f(g), so an open loop spaced T apart settles where g = T - c * f(g).
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

IdleSlowdown slowdown(std::vector<IdleSlowdown::Point> points) { return IdleSlowdown{points}; }

// One worker, batching none, a 20 ms batch of one, no overheads; requests every `spacing` s
// from `spacing` on.
// With `served` > 0 the model's measured served batch of 1 (served_idle_batch) and a served
// extra of 2 ms.
std::vector<double> latencies(const IdleSlowdown& s, double spacing, bool trace = false,
                              double served = 0) {
  sim::SimulationSetup setup = sim::test::cache_setup(1, 1, sim::test::constant_profile(0.020));
  setup.idle_slowdown = s;
  if (trace) setup.speed_trace = {{0, 1}};
  if (served > 0) {
    setup.models[0].overhead.served_idle_batch = served;
    setup.models[0].overhead.served_extra = 0.002;
  }
  return sim::test::spaced_latencies(setup, spacing);
}

}  // namespace

TEST_CASE("idle slowdown: 1 at no gap, linear between the measured gaps, flat after",
          "[simulator][profile]") {
  const IdleSlowdown s = slowdown({{0.001, 1.2}, {0.010, 1.5}});
  CHECK(s.factor_after(0) == 1);
  CHECK(s.factor_after(0.0005) == Approx(1.1));
  CHECK(s.factor_after(0.001) == Approx(1.2));
  CHECK(s.factor_after(0.0055) == Approx(1.35));
  CHECK(s.factor_after(0.010) == Approx(1.5));
  CHECK(s.factor_after(1.0) == Approx(1.5));
  CHECK(IdleSlowdown{}.factor_after(1.0) == 1);
  CHECK_NOTHROW(s.validate());
  CHECK_THROWS_AS(slowdown({{0, 1.2}}).validate(), ConfigError);
  CHECK_THROWS_AS(slowdown({{0.01, 1.2}, {0.001, 1.5}}).validate(), ConfigError);
  CHECK_THROWS_AS(slowdown({{0.01, 0}}).validate(), ConfigError);
  CHECK_THROWS_AS(slowdown({{0.01, 11}}).validate(), ConfigError);
}

TEST_CASE("idle slowdown fit: each asked gap's mean cost over the back-to-back blocks' mean",
          "[simulator][profile]") {
  // Two rounds: back to back 10 and 12 ms; 1 ms asked (1.1, 1.3 measured): 12 and 14 ms;
  // 10 ms asked (10.2, 10.4): 16 and 15 ms.
  const std::vector<IdleBlock> blocks = {{0, 0, 0.010},       {0.001, 0.0011, 0.012},
                                         {0.010, 0.0102, 0.016}, {0, 0, 0.012},
                                         {0.001, 0.0013, 0.014}, {0.010, 0.0104, 0.015}};
  const IdleSlowdown s = fit_idle_slowdown(blocks);
  REQUIRE(s.points.size() == 2);
  CHECK(s.points[0].gap == Approx(0.0012));
  CHECK(s.points[0].factor == Approx(13.0 / 11));
  CHECK(s.points[1].gap == Approx(0.0103));
  CHECK(s.points[1].factor == Approx(15.5 / 11));
  CHECK_FALSE(fit_idle_slowdown({{0.001, 0.001, 0.012}}).on());  // nothing back to back
}

TEST_CASE("a batch after its worker idled costs the profile's factor more", "[simulator]") {
  // Every 50 ms, 20 ms batches: the worker idles 20 ms or more, past the 10 ms point: 30 ms.
  for (double t : latencies(slowdown({{0.010, 1.5}}), 0.050)) CHECK(t == Approx(0.030));
  // One point at 40 ms, factor 1.8: f(g) = 1 + 0.02 g (ms); g = 50 - 20 f(g) settles at
  // g = 30 / 1.4 ms (each round trip halves the error and more), a batch at 20 f(g).
  const std::vector<double> settle = latencies(slowdown({{0.040, 1.8}}), 0.050);
  CHECK(settle.front() == Approx(0.036));  // after 50 ms idle: 1.8 x 20 ms
  CHECK(settle.back() == Approx(0.020 * (1 + 0.02 * 30 / 1.4)).epsilon(1e-6));
  // Back to back (requests every 10 ms, queued behind 20 ms batches): no idle, no slowdown
  // after the first.
  const std::vector<double> queued = latencies(slowdown({{0.010, 1.5}}), 0.010);
  CHECK(queued[0] == Approx(0.020 * (1 + 0.5)));  // the first waited 10 ms idle at the start
  CHECK(queued[1] - queued[0] == Approx(0.010));  // waited 20 ms (30 - 10), ran 20 ms
  // A speed trace gives a real run's own speeds: the profile's slowdown is off.
  for (double t : latencies(slowdown({{0.010, 1.5}}), 0.050, true)) CHECK(t == Approx(0.020));
}

TEST_CASE("a measured served batch replaces the profile's factor after idling",
          "[simulator]") {
  // Every 50 ms, past the 10 ms point: the served 26 ms as is (it holds the served extra).
  for (double t : latencies(slowdown({{0.010, 1.5}}), 0.050, false, 0.026))
    CHECK(t == Approx(0.026));
  // Ramped as the profile's slowdown: full at 40 ms, ratio 26 / 20 = 1.3: f(g) = 1 + 0.3 g / 40
  // (ms), g = 50 - 20 f(g) settles at g = 30 / 1.15 ms.
  const std::vector<double> settle = latencies(slowdown({{0.040, 1.8}}), 0.050, false, 0.026);
  CHECK(settle.front() == Approx(0.026));
  CHECK(settle.back() == Approx(0.020 * (1 + 0.3 * (30 / 1.15) / 40)).epsilon(1e-6));
  // Queued every 10 ms: the first after 10 ms idle at the start, 26 ms; the next no idle:
  // 20 ms and the served extra, starting at 36 ms for an arrival at 20: latency 38 ms.
  const std::vector<double> queued = latencies(slowdown({{0.010, 1.5}}), 0.010, false, 0.026);
  CHECK(queued[0] == Approx(0.026));
  CHECK(queued[1] == Approx(0.038));
  // A speed trace: neither (nor the served extra).
  for (double t : latencies(slowdown({{0.010, 1.5}}), 0.050, true, 0.026))
    CHECK(t == Approx(0.020));
  // share_after: the ramp the served batch follows, the factors' course over the last
  // factor's excess. At 5 ms: f = 1.2 + 0.3 * 4 / 9 = 1.3333, share 0.3333 / 0.5; at 0.5 ms:
  // f = 1.1, share 0.2 (a straight line to 10 ms would give 0.5 and 0.05).
  const IdleSlowdown s = slowdown({{0.001, 1.2}, {0.010, 1.5}});
  CHECK(s.share_after(0) == 0);
  CHECK(s.share_after(0.0005) == Approx(0.2));
  CHECK(s.share_after(0.001) == Approx(0.4));
  CHECK(s.share_after(0.005) == Approx(2.0 / 3.0));
  CHECK(s.share_after(0.010) == Approx(1));
  CHECK(s.share_after(0.020) == 1);
  CHECK(IdleSlowdown{}.share_after(1.0) == 0);
  // One point: linear in the gap up to it; a last factor not above 1 (nothing to follow):
  // linear in the gap too; an earlier factor above the last: at most the whole.
  CHECK(slowdown({{0.010, 1.5}}).share_after(0.005) == Approx(0.5));
  CHECK(slowdown({{0.010, 0.9}}).share_after(0.0025) == Approx(0.25));
  CHECK(slowdown({{0.002, 2.0}, {0.010, 1.5}}).share_after(0.002) == 1);
}

TEST_CASE("only a worker that idled while the server held no request runs slower",
          "[simulator]") {
  // One worker, room for one model on the device, 20 ms batches, f = 1.5 from a 10 ms gap.
  // m0 at 1 ms, m1 at 2 ms: m1 waits for m0's batch, then for m0's eviction and its own load,
  // with the worker idle and m1 queued all the while.
  sim::SimulationSetup setup =
      sim::test::cache_setup(2, 1, sim::test::constant_profile(0.020, 0, 0.010));
  setup.idle_slowdown = slowdown({{0.010, 1.5}});
  workloads::Workload w;
  w.send_times = {0.001, 0.002, 0.500};
  w.models = {0, 1, 1};
  const auto r = simulate(setup, w);
  REQUIRE(r.records.requests.size() == 3);
  const auto& q = r.records.requests;
  // m0: the server was empty from the start, the worker idled 1 ms: 20 x 1.05 ms.
  CHECK(q[0].start == Approx(0.001));
  CHECK(q[0].finish - q[0].start == Approx(0.021));
  // m1: its worker idled through the load, but the server was never empty: 20 ms, not 30.
  CHECK(q[1].start - q[0].finish == Approx(0.010));  // the load (the eviction is free)
  CHECK(q[1].finish - q[1].start == Approx(0.020));
  // The third arrived long after the server emptied: the whole factor.
  CHECK(q[2].start == Approx(0.500));
  CHECK(q[2].finish - q[2].start == Approx(0.030));
}

TEST_CASE("idle_slowdown in profile files and the simulation section", "[simulator][config]") {
  servelab::testutil::TempDir tmp("servelab-idle-slowdown");
  const std::filesystem::path dir = tmp.path();
  auto profile = [&](const std::string& idle) { sim::test::write_knob_profile(dir, "", idle); };
  auto config = [&](const std::string& knob) { return sim::test::knob_config(dir, knob); };
  profile("idle_slowdown: [{gap_ms: 1, factor: 1.2}, {gap_ms: 10, factor: 1.5}]\n");
  const config::ProfileFile file = config::load_profile_file((dir / "profile.yaml").string());
  REQUIRE(file.idle_slowdown.points.size() == 2);
  CHECK(file.idle_slowdown.points[1].gap == Approx(0.010));
  CHECK(file.idle_slowdown.points[1].factor == Approx(1.5));
  const config::ProfileFile again = config::parse_profile_file(
      YAML::Load(YAML::Dump(config::profile_to_yaml(file))), "again");
  REQUIRE(again.idle_slowdown.points.size() == 2);
  CHECK(again.idle_slowdown.points[0].gap == Approx(0.001));
  CHECK(again.idle_slowdown.points[0].factor == Approx(1.2));

  CHECK(config("").setup.idle_slowdown.points.size() == 2);
  sim::test::write_knob_profile(dir, ", served_idle_batch: 26",
                                "idle_slowdown: [{gap_ms: 10, factor: 1.5}]\n");
  const config::ProfileFile served = config::load_profile_file((dir / "profile.yaml").string());
  CHECK(served.front_end.overhead("m")->served_idle_batch == Approx(0.026));
  const config::ProfileFile served_again = config::parse_profile_file(
      YAML::Load(YAML::Dump(config::profile_to_yaml(served))), "again");
  CHECK(served_again.front_end.overhead("m")->served_idle_batch == Approx(0.026));
  CHECK(config("").setup.models[0].overhead.served_idle_batch == Approx(0.026));
  sim::test::write_knob_profile(dir, ", served_idle_batch: -1");
  CHECK_THROWS_WITH(config(""), Contains("served_idle_batch"));
  profile("idle_slowdown: [{gap_ms: 1, factor: 1.2}, {gap_ms: 10, factor: 1.5}]\n");
  const sim::SimConfig off = config(", machine: {without: [idle_slowdown]}");
  CHECK_FALSE(off.setup.idle_slowdown.on());
  CHECK(off.resolved["simulation"]["machine"]["without"][0].as<std::string>() == "idle_slowdown");
  CHECK_THROWS_WITH(config(", idle_slowdown: maybe"),
                    Contains("simulation.idle_slowdown") && Contains("machine: {without: [idle_slowdown]}"));

  profile("idle_slowdown: [{gap_ms: 10, factor: 1.5}, {gap_ms: 1, factor: 1.2}]\n");
  CHECK_THROWS_WITH(config(""), Contains("idle_slowdown") && Contains("ascend"));
  profile("idle_slowdown: [{gap_ms: 10}]\n");
  CHECK_THROWS_WITH(config(""), Contains("idle_slowdown.0") && Contains("gap_ms and factor"));
  profile("idle_slowdown: {gap_ms: 10, factor: 1.5}\n");
  CHECK_THROWS_WITH(config(""), Contains("idle_slowdown") && Contains("list"));
}
