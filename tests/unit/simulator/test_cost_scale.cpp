// simulation.cost_scale: the same machine k times slower. Ground truth by hand: one closed-loop
// client in event mode without noise waits exactly overhead before + batch(1) + after
// per request, so every latency scales by k and the throughput by 1/k.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "results/records.h"
#include "simulator/sim_config.h"
#include "workloads/workload.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

// Batch 1: 10 ms (sd 1), batch 4: 16 ms; load disk->host 30 ms; overheads 2 + 1 ms.
const char* kProfile = R"(models:
  m:
    size_bytes: 1000
    batch_latency_ms:
      - {batch: 1, mean: 10, stddev: 1, samples: [9, 10, 11]}
      - {batch: 4, mean: 16, stddev: 2}
    load_ms: {disk->host: 30}
    request_overhead_ms: {before: 2, after: 1, preprocess: 0.5}
)";

sim::SimConfig scaled_config(const fs::path& dir, const std::string& scale) {
  std::string yaml = "models: [m]\nprofile: profile.yaml\n"
                     "engine: {workers: 1, quantum_ms: 0, exec_tier: host}\n"
                     "workload: {requests: 50, arrival: {type: closed, concurrency: 1}}\n"
                     "simulation: {noise: none" +
                     (scale.empty() ? "" : ", cost_scale: " + scale) + "}\n";
  return sim::parse_sim_config(YAML::Load(yaml), "c.yaml", dir.string());
}

}  // namespace

TEST_CASE("cost_scale multiplies every cost of the profile", "[simulator][profile]") {
  servelab::testutil::TempDir tmp_dir("servelab-cost-scale");
  const std::filesystem::path dir = tmp_dir.path();
  std::ofstream(dir / "profile.yaml") << kProfile;

  const sim::SimConfig one = scaled_config(dir, "");
  const sim::SimConfig two = scaled_config(dir, "2.5");
  const ModelProfile& a = one.setup.models[0].profile;
  const ModelProfile& b = two.setup.models[0].profile;
  CHECK(b.batch_latency(1) == Approx(2.5 * 0.010));
  CHECK(b.batch_latency(3) == Approx(2.5 * 0.014));  // interpolated, then scaled
  CHECK(b.batch_stddev(4) == Approx(2.5 * 0.002));
  CHECK(b.batches[0].samples[2] == Approx(2.5 * 0.011));
  CHECK(b.load_seconds(Tier::Disk, Tier::Host) == Approx(2.5 * 0.030));
  const RequestOverhead& ob = two.setup.models[0].overhead;
  CHECK(ob.before == Approx(2.5 * 0.002));
  CHECK(ob.after == Approx(2.5 * 0.001));
  CHECK(ob.preprocess == Approx(2.5 * 0.0005));
  CHECK(a.batch_latency(1) == Approx(0.010));
  CHECK(two.resolved["simulation"]["cost_scale"].as<double>() == 2.5);
  CHECK(one.resolved["simulation"]["cost_scale"].as<double>() == 1);

  // One client, no waiting anywhere: latency = 2 + 10 + 1 ms, times the scale.
  for (const sim::SimConfig* c : {&one, &two}) {
    const double k = c == &one ? 1 : 2.5;
    auto r = sim::simulate(c->setup, workloads::generate(c->run.workload));
    REQUIRE(r.records.requests.size() == 50);
    for (const auto& q : r.records.requests) REQUIRE(q.finish - q.arrival == Approx(k * 0.013));
    auto s = results::summarize(r.records);
    CHECK(s["throughput_rps"].get<double>() == Approx(1 / (k * 0.013)).epsilon(0.001));
  }

  CHECK_THROWS_WITH(scaled_config(dir, "0"), Contains("simulation.cost_scale") && Contains("positive"));
  CHECK_THROWS_WITH(scaled_config(dir, "-1"), Contains("positive"));
  CHECK_THROWS_WITH(scaled_config(dir, "fast"), Contains("cost_scale"));
}

TEST_CASE("the load generator's thread spaces simultaneous sends by its cost",
          "[simulator][profile]") {
  // Four clients send at t = 0; each send holds the one client thread for 1 ms, so the
  // records' send times are 0, 1, 2, 3 ms (hand-computed); without the cost all are 0.
  sim::SimulationSetup s;
  s.control.workers = 1;
  ModelProfile p;
  p.batches = {{1, 0.010, 0, {}}};
  RequestOverhead o;
  o.before = 0.002;
  o.preprocess = 0.001;
  o.client = 0.001;
  s.models.push_back({"m", p, 1, 0, o});
  workloads::Workload w;
  w.closed_loop = true;
  w.concurrency = 4;
  w.models.assign(4, 0);
  auto r = sim::simulate(s, w);
  std::vector<double> sends;
  for (const auto& q : r.records.requests) sends.push_back(q.arrival);
  std::sort(sends.begin(), sends.end());
  REQUIRE(sends.size() == 4);
  for (int i = 0; i < 4; ++i) CHECK(sends[i] == Approx(0.001 * i).margin(1e-12));
  s.models[0].overhead.client = 0;
  auto plain = sim::simulate(s, w);
  for (const auto& q : plain.records.requests) CHECK(q.arrival == 0);
}

TEST_CASE("speed_trace multiplies batch and load costs from each window's start on",
          "[simulator][profile]") {
  // One client in event mode without noise, cold start (no preload): the first request waits
  // for the 30 ms load, every request pays 2 + 10 + 1 ms. From 0.1 s on the machine runs at
  // half speed: batches dispatched from then on take 20 ms. Hand-computed: request 0 is
  // dispatched at 2 ms and finishes at 2 + 30 + 10 + 1 = 43 ms; request i >= 1 is sent at
  // 43 + 13 (i - 1) ms and dispatched 2 ms later: 45, 58, 71, 84, 97 (< 100), then 110 ms.
  servelab::testutil::TempDir tmp_dir1("servelab-speed-trace");
  const std::filesystem::path dir = tmp_dir1.path();
  std::ofstream(dir / "profile.yaml") << kProfile;
  auto config = [&](const std::string& trace) {
    return sim::parse_sim_config(
        YAML::Load("models: [m]\nprofile: profile.yaml\n"
                   "engine: {workers: 1, quantum_ms: 0, exec_tier: host}\n"
                   "workload: {requests: 10, arrival: {type: closed, concurrency: 1}}\n"
                   "simulation: {noise: none, preload: none, speed_trace: " + trace + "}\n"),
        "c.yaml", dir.string());
  };
  const sim::SimConfig c = config("[[0, 1], [0.1, 2]]");
  REQUIRE(c.setup.speed_trace.size() == 2);
  CHECK(c.setup.speed_at(0.05) == 1);
  CHECK(c.setup.speed_at(0.1) == 2);
  CHECK(c.resolved["simulation"]["speed_trace"][1][1].as<double>() == 2);
  auto r = sim::simulate(c.setup, workloads::generate(c.run.workload));
  REQUIRE(r.records.requests.size() == 10);
  const auto& q = r.records.requests;
  CHECK(q[0].finish - q[0].arrival == Approx(0.043));
  for (int i = 1; i <= 5; ++i) CHECK(q[i].finish - q[i].arrival == Approx(0.013));
  for (int i = 6; i < 10; ++i) CHECK(q[i].finish - q[i].arrival == Approx(0.023));

  // A load that starts in a slow window takes twice as long: everything at half speed.
  const sim::SimConfig slow = config("[[0, 2]]");
  auto s = sim::simulate(slow.setup, workloads::generate(slow.run.workload));
  CHECK(s.records.requests[0].finish - s.records.requests[0].arrival == Approx(0.083));

  CHECK_THROWS_WITH(config("[[0, 1], [0, 2]]"), Contains("speed_trace.1.0") && Contains("after"));
  CHECK_THROWS_WITH(config("[[0, 0]]"), Contains("positive"));
  CHECK_THROWS_WITH(config("[[0, 1, 2]]"), Contains("[from_s, factor]"));
  CHECK_THROWS_WITH(config("2"), Contains("list"));
}

TEST_CASE("jitter replaces the profile's batch noise by a relative normal spread",
          "[simulator][profile]") {
  // One client in event mode: each request is one batch of 1, so batch times are finish -
  // arrival - 3 ms of overheads. The profile's own noise (samples 9, 10, 11 ms) gives way.
  servelab::testutil::TempDir tmp_dir2("servelab-jitter");
  const std::filesystem::path dir = tmp_dir2.path();
  std::ofstream(dir / "profile.yaml") << kProfile;
  auto batch_times = [&](const std::string& sim) {
    const sim::SimConfig c = sim::parse_sim_config(
        YAML::Load("models: [m]\nprofile: profile.yaml\n"
                   "engine: {workers: 1, quantum_ms: 0, exec_tier: host}\n"
                   "workload: {requests: 4000, arrival: {type: closed, concurrency: 1}}\n"
                   "simulation: " + sim + "\n"),
        "c.yaml", dir.string());
    std::vector<double> t;
    for (const auto& q : sim::simulate(c.setup, workloads::generate(c.run.workload)).records.requests)
      t.push_back(q.finish - q.arrival - 0.003);
    return t;
  };
  // jitter 0: the mean exactly, although noise is on.
  for (double t : batch_times("{noise: empirical, jitter: 0}")) REQUIRE(t == Approx(0.010));
  // jitter 0.2: mean 10 ms, standard deviation 2 ms (4000 draws: within 3-4 standard errors).
  std::vector<double> t = batch_times("{noise: empirical, jitter: 0.2, seed: 7}");
  double sum = 0, sq = 0;
  for (double x : t) sum += x;
  const double mean = sum / t.size();
  for (double x : t) sq += (x - mean) * (x - mean);
  const double sd = std::sqrt(sq / (t.size() - 1));
  CHECK(mean == Approx(0.010).margin(0.0001));
  CHECK(sd == Approx(0.002).margin(0.0001));
  // Values the profile's samples never take: not drawn from them.
  CHECK(std::count_if(t.begin(), t.end(), [](double x) { return x < 0.0085; }) > 100);
  // jitter with noise off: no noise.
  for (double x : batch_times("{noise: none, jitter: 0.2}")) REQUIRE(x == Approx(0.010));
  CHECK_THROWS_WITH(batch_times("{jitter: -0.1}"), Contains("simulation.jitter"));
}
