// The machine's speed course (calibration/terms/speed_course.h). Ground truth: normal tables, the
// Ornstein-Uhlenbeck correlations a * exp(-dt / tau1) + b * exp(-dt / tau2) of the model's
// definition checked on long runs, a fit against a course generated here with known parameters, and a closed
// loop whose latency (a sum of batch costs) spreads more when consecutive costs move together.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "config/profile_yaml.h"
#include "engine/control/draws.h"
#include "calibration/terms/speed_course.h"
#include "simulator/sim_config.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/simulator/sim_test_util.h"

using namespace servelab;
using Catch::Matchers::Contains;

namespace {

// A drift of two courses and no measured spread.
SpeedDrift drift_of(SpeedDrift::Course fast, SpeedDrift::Course slow) {
  SpeedDrift d;
  d.fast = fast;
  d.slow = slow;
  return d;
}

double correlation_at(const std::vector<double>& z, size_t lag) {
  double mean = 0, var = 0, cov = 0;
  for (double v : z) mean += v;
  mean /= double(z.size());
  for (double v : z) var += (v - mean) * (v - mean);
  for (size_t i = 0; i + lag < z.size(); ++i) cov += (z[i] - mean) * (z[i + lag] - mean);
  return (cov / double(z.size() - lag)) / (var / double(z.size()));
}

// One worker, no batching, event mode, a closed loop of 8: each latency is about the sum of
// the 8 batch costs before it. Batch 1 costs one of 41 samples, 18..26 ms.
sim::SimulationSetup loop_setup(SpeedDrift drift) {
  ModelProfile p = sim::test::constant_profile(0.022);
  p.batches = {{1, 0.022, 0.0024, {}}};
  for (int i = 0; i <= 40; ++i) p.batches[0].samples.push_back(0.018 + 0.0002 * i);
  sim::SimulationSetup s = sim::test::cache_setup(1, 1, p);
  s.control.exec_tier = Tier::Host;
  s.control.quantum = 0;
  s.noise = CostNoise::Empirical;
  s.speed_drift = drift;
  return s;
}

struct Spread {
  double mean = 0, width = 0;  // latency mean and p99 - mean, seconds
};

Spread latency_spread(const sim::SimulationSetup& s) {
  sim::SimulationResult r = sim::simulate(s, sim::test::closed_loop(std::vector<uint32_t>(4000, 0), 8));
  std::vector<double> lat;
  for (const auto& x : r.records.requests) lat.push_back(x.finish - x.arrival);
  std::sort(lat.begin(), lat.end());
  Spread out;
  for (double v : lat) out.mean += v / double(lat.size());
  out.width = lat[size_t(0.99 * double(lat.size() - 1))] - out.mean;
  return out;
}

}  // namespace

TEST_CASE("normal quantile and distribution function match the tables", "[simulator][speed]") {
  CHECK(normal_quantile(0.975) == Approx(1.959963985).margin(1e-8));
  CHECK(normal_quantile(0.5) == Approx(0).margin(1e-10));
  CHECK(normal_quantile(0.001) == Approx(-3.090232306).margin(1e-8));
  CHECK(normal_cdf(1.0) == Approx(0.841344746).margin(1e-9));
  for (double p : {1e-6, 0.1, 0.37, 0.9, 0.999999}) CHECK(normal_cdf(normal_quantile(p)) == Approx(p));
}

TEST_CASE("the course's scores are standard normal and correlate as its two courses say",
          "[simulator][speed]") {
  const SpeedDrift d = drift_of({0.3, 0.02}, {0.4, 0.4});
  SpeedCourse course(d, 11), again(d, 11);
  std::vector<double> z;
  const double dt = 0.02;
  for (int i = 0; i < 40000; ++i) {
    z.push_back(course.score_at(i * dt));
    REQUIRE(again.score_at(i * dt) == z.back());  // one seed, one course
  }
  double mean = 0, var = 0;
  for (double v : z) mean += v / double(z.size());
  for (double v : z) var += (v - mean) * (v - mean) / double(z.size());
  // About three standard errors: the slow course leaves ~2,300 independent stretches.
  CHECK(mean == Approx(0).margin(0.07));
  CHECK(var == Approx(1).margin(0.09));
  for (size_t lag : {1, 5, 50, 200}) {
    INFO("lag " << lag);
    CHECK(correlation_at(z, lag) == Approx(0.3 * std::exp(-double(lag)) +
                                           0.4 * std::exp(-double(lag) / 20)).margin(0.03));
  }
  CHECK(d.correlation(0.02) == Approx(0.3 * std::exp(-1) + 0.4 * std::exp(-0.05)));
  CHECK_THROWS_AS(SpeedCourse(drift_of({0.6, 0.1}, {0.4, 1}), 1),
                  ConfigError);  // sum 1
  CHECK_THROWS_AS(SpeedCourse(drift_of({0.5, 0}, {}), 1), ConfigError);
}

TEST_CASE("fit_speed_drift recovers a course generated with known shares and times",
          "[simulator][speed]") {
  std::mt19937_64 rng(5);
  const SpeedDrift truth = drift_of({0.35, 0.02}, {0.45, 0.4});
  const double dt = 0.02;
  const double a1 = std::exp(-dt / truth.fast.tau), a2 = std::exp(-dt / truth.slow.tau);
  std::vector<Time> starts;
  std::vector<double> costs, independent;
  double x1 = standard_normal(rng), x2 = standard_normal(rng);
  for (int i = 0; i < 20000; ++i) {
    x1 = a1 * x1 + std::sqrt(1 - a1 * a1) * standard_normal(rng);
    x2 = a2 * x2 + std::sqrt(1 - a2 * a2) * standard_normal(rng);
    const double z = std::sqrt(0.35) * x1 + std::sqrt(0.45) * x2 + std::sqrt(0.2) * standard_normal(rng);
    starts.push_back(i * dt);
    costs.push_back(0.02 * std::exp(0.1 * z));  // any increasing map of the score
    independent.push_back(0.02 * std::exp(0.1 * standard_normal(rng)));
  }
  const SpeedDrift d = fit_speed_drift(starts, costs);
  for (double lag : {1.0, 5.0, 20.0, 60.0}) {
    INFO("lag " << lag);
    CHECK(d.correlation(lag * dt) == Approx(truth.correlation(lag * dt)).margin(0.05));
  }
  CHECK(d.fast.share + d.slow.share == Approx(0.8).margin(0.1));
  CHECK(d.slow.tau == Approx(0.4).epsilon(0.4));
  CHECK_FALSE(fit_speed_drift(starts, independent).has_course());  // each pass its own draw
  CHECK_FALSE(fit_speed_drift(starts, independent).spread.empty());  // kept either way
  CHECK_FALSE(fit_speed_drift({0, 1, 2}, {1, 2, 3}).on());   // too short to tell
}

TEST_CASE("the fitted spread holds the series' quantiles over its median, per window",
          "[simulator][speed]") {
  // Costs 1, 2, ..., 1001 ms in a shuffled order, a pass every 10 ms: a window of one pass
  // has the quantile 1 + 1000 p ms at p, over the median 501 ms.
  std::vector<Time> starts;
  std::vector<double> costs;
  for (int i = 0; i <= 1000; ++i) costs.push_back(0.001 * (1 + i));
  std::shuffle(costs.begin(), costs.end(), std::mt19937_64(3));
  for (size_t i = 0; i < costs.size(); ++i) starts.push_back(0.01 * double(i));
  const SpeedDrift d = fit_speed_drift(starts, costs);
  // Windows of 1, 2, 4, ..., 64 passes: 1001 passes hold 8 windows of 125 at most.
  REQUIRE(d.spread.size() == 7);
  CHECK(d.spread[0].window == Approx(0.01));
  CHECK(d.spread[6].window == Approx(0.64));
  REQUIRE(d.spread[0].quantiles.size() == kSpreadPoints);
  for (size_t i : {size_t(0), size_t(49), size_t(99)}) {
    const double p = (double(i) + 0.5) / double(kSpreadPoints);
    INFO("quantile " << i);
    CHECK(d.spread[0].quantiles[i] == Approx((1 + 1000 * p) / 501).epsilon(1e-9));
  }
  CHECK(d.spread_at(0.01, 0.5) == Approx(1.0).epsilon(1e-9));
  CHECK(d.spread_at(0.001, 0.0) == d.spread[0].quantiles.front());  // ends: the end values
  CHECK(d.spread_at(0.001, 1.0) == d.spread[0].quantiles.back());
  // Means of 64 shuffled costs (sd of one cost 289 ms, of the mean ~36 ms) stay far nearer
  // the middle than single costs.
  CHECK(d.spread[6].quantiles.back() < 0.5 * d.spread[0].quantiles.back() + 0.5);
  CHECK(d.spread[6].quantiles.front() > 0.7);
}

TEST_CASE("with a spread, a cost is the size's median times the spread at its score",
          "[simulator][speed]") {
  ModelProfile p = sim::test::constant_profile(0.010);
  p.batches = {{1, 0.010, 0.001, {0.011, 0.009, 0.010}}, {4, 0.040, 0.002, {0.040}}};
  SpeedDrift d;
  // Windows of 10 and 40 ms, quantiles at probabilities 1/6, 1/2, 5/6.
  d.spread = {{0.010, {0.5, 1.0, 2.0}}, {0.040, {0.9, 1.0, 1.2}}};
  SpeedCourse c(d, 1);
  const double top = normal_quantile(5.0 / 6);
  CHECK(c.cost(p, 1, CostNoise::Empirical, 0) == Approx(0.010));                     // median
  CHECK(c.cost(p, 1, CostNoise::Empirical, top) == Approx(0.020));
  CHECK(c.cost(p, 1, CostNoise::Empirical, normal_quantile(2.0 / 3)) == Approx(0.015));  // halfway
  CHECK(c.cost(p, 1, CostNoise::Empirical, -5) == Approx(0.005));                     // lowest
  CHECK(c.cost(p, 4, CostNoise::Empirical, top) == Approx(0.040 * 1.2));  // the 40 ms window
  // Batch 2: batch 1's median scaled to its interpolated mean, 20 ms, halfway in log time
  // between the windows: spread 2.0 and 1.2 weighed equally.
  CHECK(c.cost(p, 2, CostNoise::Empirical, top) == Approx(0.020 * 1.6));
  CHECK(c.cost(p, 4, CostNoise::None, 2) == 0.040);
  d.spread = {{0.010, {1.0, 0.9}}};
  CHECK_THROWS_AS(SpeedCourse(d, 1), ConfigError);   // quantiles do not decrease
  d.spread = {{0.040, {1.0}}, {0.010, {1.0}}};
  CHECK_THROWS_AS(SpeedCourse(d, 1), ConfigError);   // windows out of order
}

TEST_CASE("a cost at a score is that quantile of the nearest measured size", "[simulator][speed]") {
  ModelProfile p = sim::test::constant_profile(0.010);
  p.batches = {{1, 0.010, 0.001, {0.011, 0.009, 0.010}}, {4, 0.016, 0.002, {}}};
  SpeedCourse c(drift_of({0.5, 1}, {}), 1);
  CHECK(c.cost(p, 1, CostNoise::Empirical, -3) == 0.009);
  CHECK(c.cost(p, 1, CostNoise::Empirical, 0) == 0.010);
  CHECK(c.cost(p, 1, CostNoise::Empirical, 3) == 0.011);
  // Batch 2 draws batch 1's samples scaled to its interpolated mean, 12 ms.
  CHECK(c.cost(p, 2, CostNoise::Empirical, 3) == Approx(0.011 * 0.012 / 0.010));
  CHECK(c.cost(p, 4, CostNoise::Normal, 1) == Approx(0.018));
  CHECK(c.cost(p, 4, CostNoise::Normal, -9) == Approx(0.016));  // not above 0: the mean
  CHECK(c.cost(p, 4, CostNoise::None, 2) == 0.016);
}

TEST_CASE("a closed loop's latency spreads wider on a speed course, around the same mean",
          "[simulator][speed]") {
  const Spread independent = latency_spread(loop_setup({}));
  const SpeedDrift drift = drift_of({0.3, 0.02}, {0.5, 0.5});
  const Spread course = latency_spread(loop_setup(drift));
  CHECK(course.mean == Approx(independent.mean).epsilon(0.03));
  CHECK(course.width > 1.5 * independent.width);
  // A real run's own course (jitter or a speed trace) replaces the profile's.
  sim::SimulationSetup with_jitter = loop_setup(drift);
  with_jitter.jitter = 0.05;
  sim::SimulationSetup plain_jitter = loop_setup({});
  plain_jitter.jitter = 0.05;
  const auto w = sim::test::closed_loop(std::vector<uint32_t>(200, 0), 8);
  const auto a = sim::simulate(with_jitter, w).records.requests;
  const auto b = sim::simulate(plain_jitter, w).records.requests;
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) REQUIRE(a[i].finish == b[i].finish);
}

TEST_CASE("the profile's speed_drift reaches the setup unless the run turns it off",
          "[simulator][speed][profile]") {
  servelab::testutil::TempDir tmp_dir("servelab-speed-drift");
  const std::filesystem::path dir = tmp_dir.path();
  std::ofstream(dir / "profile.yaml")
      << "models: {m: {size_bytes: 1, batch_latency_ms: [{batch: 1, mean: 10}], "
         "load_ms: {disk->host: 5}}}\n"
         "speed_drift: {fast: {share: 0.3, tau_ms: 20}, slow: {share: 0.4, tau_ms: 250}, "
         "spread: [{window_ms: 25, quantiles: [0.9, 1, 1.6]}]}\n";
  auto setup_with = [&](const std::string& simulation) {
    return sim::parse_sim_config(
               YAML::Load("models: [m]\nprofile: profile.yaml\n"
                          "workload: {requests: 5, arrival: {type: closed, concurrency: 1}}\n"
                          "simulation: {noise: empirical" + simulation + "}\n"),
               "c.yaml", dir.string())
        .setup;
  };
  const sim::SimulationSetup s = setup_with("");
  CHECK(s.speed_drift.fast.share == Approx(0.3));
  CHECK(s.speed_drift.slow.tau == Approx(0.25));
  CHECK_FALSE(setup_with(", machine: {without: [speed_drift]}").speed_drift.on());
  CHECK_THROWS_WITH(setup_with(", speed_drift: maybe"), Contains("machine: {without: [speed_drift]}"));
  // Written back with the profile; shares summing to 1 would leave no pass-to-pass spread.
  const config::ProfileFile f = config::load_profile_file((dir / "profile.yaml").string());
  const config::ProfileFile back = config::parse_profile_file(config::profile_to_yaml(f), "back");
  CHECK(back.speed_drift.slow.tau == Approx(0.25));
  CHECK(back.speed_drift.fast.share == Approx(0.3));
  REQUIRE(back.speed_drift.spread.size() == 1);
  CHECK(back.speed_drift.spread[0].window == Approx(0.025));
  CHECK(back.speed_drift.spread[0].quantiles == std::vector<double>{0.9, 1, 1.6});
  CHECK(s.speed_drift.spread.size() == 1);
  YAML::Node unordered = config::profile_to_yaml(f);
  unordered["speed_drift"]["spread"][0]["quantiles"][2] = 0.5;
  CHECK_THROWS_WITH(config::parse_profile_file(unordered, "p.yaml"), Contains("not decrease"));
  YAML::Node bad = config::profile_to_yaml(f);
  bad["speed_drift"]["slow"]["share"] = 0.7;
  CHECK_THROWS_WITH(config::parse_profile_file(bad, "p.yaml"), Contains("sum to less than 1"));
}
