// `servelab run` in both modes on a real model (tiny_cnn from scripts/make-models --tiny):
// the in-process engine behind real HTTP, the load generator, the profiler, and speed
// matching between the real run and its simulation.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "experiments/backends.h"
#include "experiments/experiment.h"
#include "calibration/profiler.h"
#include "experiments/runner.h"
#include "calibration/speed_probe.h"
#include "results/records.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
namespace ex = servelab::experiments;
namespace fs = std::filesystem;

namespace {

const std::string kModels = std::string(SERVELAB_SOURCE_DIR) + "/models";

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// Both modes on `profile` with a probe before each real run (--calibrate-each), into dir/out;
// `run` runs an experiment, with `options` as a test leaves them.
struct CalibratedRuns {
  std::unique_ptr<ex::Backend> sim, real;
  ex::RunOptions options;
  CalibratedRuns(const fs::path& dir, const std::string& profile)
      : sim(ex::make_sim_backend({profile, kModels, dir.string(), false, ""})),
        real(ex::make_real_backend({"", kModels, profile, dir.string(), "", false})) {
    options.out_dir = (dir / "out").string();
    options.quiet = true;
    options.calibrate_each = true;
  }
  ex::RunOutcome run(const ex::ExperimentSpec& spec) {
    return ex::run_experiment(spec, options, {{"sim", sim.get()}, {"real", real.get()}});
  }
};

// A reduced probe of tiny_cnn: the profiler's every step, on few sizes, short sampling and
// few bursts.
ex::ProfileOptions reduced_probe(std::vector<uint32_t> batch_sizes) {
  ex::ProfileOptions probe;
  probe.models_dir = kModels;
  probe.models = {"tiny_cnn"};
  probe.batch_sizes = std::move(batch_sizes);
  probe.batches.samples = 3;
  probe.batches.min_seconds_per_size = 0.05;
  probe.batches.max_seconds_per_size = 0.5;
  probe.load_samples = 3;
  probe.min_load_seconds = 0;
  probe.course_seconds = 0.2;
  probe.idle_seconds = 0.2;
  probe.overhead_requests = 30;
  probe.cold_burst_sizes = {2, 4, 8};
  probe.cold_bursts = 2;
  probe.served_rounds = 2;
  probe.served_turn_seconds = 0.02;
  probe.served_idle_turns = 0;  // the sleeping probe's blocks (test_overhead_probe: the served one)
  probe.served_miss_requests = 4;
  return probe;
}

}  // namespace

TEST_CASE("both modes with matched speed: real records carry the engine's split",
          "[experiments][real]") {
  servelab::testutil::TempDir tmp_dir("servelab-real-mode");
  const std::filesystem::path dir = tmp_dir.path();
  const std::string profile = (dir / "profile.yaml").string();
  ex::ensure_profile_with(profile, reduced_probe({1, 2, 4, 8}));
  // The probe's cold bursts are stored once, profile-level; the overhead per model.
  const config::ProfileFile measured = config::load_profile_file(profile);
  CHECK(!measured.front_end.cold_bursts.empty());
  REQUIRE(measured.front_end.overhead("tiny_cnn") != nullptr);
  // A served batch's extra over back to back: measured, finite, never negative.
  CHECK(std::isfinite(measured.front_end.overhead("tiny_cnn")->served_extra));
  CHECK(measured.front_end.overhead("tiny_cnn")->served_extra >= 0);
  // Its served misses reach the profile: a real load of the module and a batch, each timed.
  CHECK(measured.front_end.overhead("tiny_cnn")->served_miss_load > 0);
  CHECK(measured.front_end.overhead("tiny_cnn")->served_miss_batch > 0);
  // The probe's three timed loads (after an untimed one), no time budget.
  const ModelProfile* tiny = measured.costs.find("tiny_cnn");
  REQUIRE(tiny != nullptr);
  CHECK(tiny->load_samples[int(Tier::Disk)][int(Tier::Host)].size() == 3);
  // The slowdown after idling: a point per asked gap, each idled at least that long.
  REQUIRE(measured.idle_slowdown.points.size() == ex::kIdleGaps.size());
  for (size_t i = 0; i < ex::kIdleGaps.size(); ++i) {
    CHECK(measured.idle_slowdown.points[i].gap >= ex::kIdleGaps[i]);
    CHECK(measured.idle_slowdown.points[i].factor > 0);
  }

  ex::ExperimentSpec spec = ex::parse_experiment(YAML::Load(R"(
name: real-mode-test
modes: [sim, real]
sweep:
  workload.arrival.concurrency: [1, 6]
models: [tiny_cnn]
engine: {workers: 1, quantum_ms: 10, max_batch: 8}
policies: {batching: {name: rafiqi-ewma}}
workload: {requests: 40, arrival: {type: closed, concurrency: 1}, access: {type: uniform}}
simulation: {noise: normal}
)"), (dir / "experiment.yaml").string());
  auto sim = ex::make_sim_backend({profile, kModels, dir.string(), false, ""});
  auto real = ex::make_real_backend({"", kModels, profile, dir.string(), "", false});
  ex::RunOptions ro;
  ro.out_dir = (dir / "out").string();
  ro.quiet = true;
  ro.match_speed = true;
  ex::RunOutcome out = ex::run_experiment(spec, ro, {{"sim", sim.get()}, {"real", real.get()}});
  REQUIRE(out.failed == 0);
  REQUIRE(out.runs == 4);

  for (const char* point : {"p000", "p001"}) {
    CAPTURE(point);
    const fs::path runs = dir / "out" / "runs";
    const auto records =
        results::read_requests_csv((runs / (std::string(point) + "-real-r0") / "requests.csv").string());
    REQUIRE(records.requests.size() == 40);  // the warm-up is not recorded
    uint32_t largest = 0;
    for (const auto& r : records.requests) {
      REQUIRE(r.status == RequestStatus::Ok);
      REQUIRE(r.batch_size >= 1);
      REQUIRE(r.batch_size <= 8);
      largest = std::max(largest, r.batch_size);
      // The engine's split lies inside the client's round trip (1 ms for clock reads).
      CHECK(r.arrival <= r.queued + 1e-3);
      CHECK(r.queued <= r.dispatch);
      CHECK(r.dispatch <= r.start);
      CHECK(r.start < r.finish);
    }
    if (std::string(point) == "p000") CHECK(largest == 1);  // one client: nothing to batch

    const auto real_summary = read_json(runs / (std::string(point) + "-real-r0") / "summary.json");
    const auto sim_summary = read_json(runs / (std::string(point) + "-sim-r0") / "summary.json");
    CHECK(real_summary["completed"] == 40);
    // The real run says what else the machine ran meanwhile; the simulation has nothing to say.
    REQUIRE(real_summary.contains("background_cores"));
    CHECK(real_summary["background_cores"].get<double>() >= 0);
    CHECK(!sim_summary.contains("background_cores"));
    const double speed = real_summary["speed_factor"].get<double>();
    // tiny_cnn computes in microseconds, so the engine's hand-offs (which the profile, timed
    // around the forward alone, does not hold) dominate its factor: only its sign is known.
    CHECK(std::isfinite(speed));
    CHECK(speed > 0);
    CHECK(sim_summary["cost_scale"].get<double>() == speed);
    CHECK(sim_summary["unscaled"]["completed"] == 40);
    const YAML::Node cfg = YAML::LoadFile((runs / (std::string(point) + "-sim-r0") / "config.yaml").string());
    CHECK(cfg["simulation"]["cost_scale"].as<double>() == Approx(speed));
    if (std::string(point) == "p000") {
      // 40 batches of one request: five windows of 8, the first from 0.
      CHECK(sim_summary["speed_windows"] == 5);
      REQUIRE(cfg["simulation"]["speed_trace"].size() == 5);
      CHECK(cfg["simulation"]["speed_trace"][0][0].as<double>() == 0);
      CHECK(cfg["simulation"]["speed_trace"][4][0].as<double>() > 0);
    }
  }

  // The factors are queryable.
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open((dir / "out" / "results.db").string().c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db,
                             "select count(*) from results r join results s using (point_id) "
                             "where r.mode = 'real' and s.mode = 'sim' and "
                             "r.speed_factor = s.cost_scale",
                             -1, &st, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  CHECK(sqlite3_column_int(st, 0) == 2);
  sqlite3_finalize(st);
  sqlite3_close(db);

  // Matching needs both modes.
  ro.modes = {"sim"};
  CHECK_THROWS_WITH(ex::run_experiment(spec, ro, {{"sim", sim.get()}, {"real", real.get()}}),
                    Catch::Matchers::Contains("both modes"));
}

// --calibrate-each: a probe before each real run; the sim run of the same point and repetition
// predicts on the profile rescaled to it and the probes before it, and says so. Sim alone
// cannot calibrate.
TEST_CASE("both modes calibrated before each real run: sim runs use that run's probe",
          "[experiments][real]") {
  servelab::testutil::TempDir tmp_dir("servelab-calibrate-each");
  const fs::path dir = tmp_dir.path();
  const std::string profile = (dir / "profile.yaml").string();
  ex::ensure_profile_with(profile, reduced_probe({1, 2, 3, 4, 8}));

  ex::ExperimentSpec spec = ex::parse_experiment(YAML::Load(R"(
name: calibrate-each-test
modes: [sim, real]
sweep:
  workload.arrival.concurrency: [1, 4]
models: [tiny_cnn]
engine: {workers: 1, max_batch: 4}
policies: {batching: {name: max-delay, max_delay: 0}}
workload: {requests: 20, arrival: {type: closed, concurrency: 1}, access: {type: uniform}}
)"), (dir / "experiment.yaml").string());
  CalibratedRuns runs(dir, profile);
  ex::RunOutcome out = runs.run(spec);
  REQUIRE(out.failed == 0);
  REQUIRE(out.runs == 4);

  const config::ProfileFile base = config::load_profile_file(profile);
  const ModelProfile* before = base.costs.find("tiny_cnn");
  REQUIRE(before != nullptr);
  for (const char* point : {"p000", "p001"}) {
    CAPTURE(point);
    const fs::path calibration =
        dir / "out" / "runs" / (std::string(point) + "-r0-calibration.yaml");
    REQUIRE(fs::exists(calibration));
    const nlohmann::json s = read_json(dir / "out" / "runs" / (std::string(point) + "-sim-r0") /
                                       "summary.json");
    CHECK(s["calibrated_profile"] == fs::absolute(calibration).string());
    // Probed at 1, 2 and 4 (max batch 4): batch 3's factor lies between batch 2's and 4's.
    const config::ProfileFile calibrated = config::load_profile_file(calibration.string());
    const ModelProfile* after = calibrated.costs.find("tiny_cnn");
    REQUIRE(after != nullptr);
    auto factor = [&](uint32_t b) { return after->batch_latency(b) / before->batch_latency(b); };
    CHECK(factor(3) >= std::min(factor(2), factor(4)) - 1e-9);
    CHECK(factor(3) <= std::max(factor(2), factor(4)) + 1e-9);
    // Loads too: the probe's load time, the base's samples scaled by probe / base.
    const double k = after->load_seconds(Tier::Disk, Tier::Host) /
                     before->load_seconds(Tier::Disk, Tier::Host);
    const auto& was = before->load_samples[int(Tier::Disk)][int(Tier::Host)];
    const auto& now = after->load_samples[int(Tier::Disk)][int(Tier::Host)];
    REQUIRE(now.size() == was.size());
    for (size_t i = 0; i < now.size(); ++i) CHECK(now[i] == Approx(was[i] * k));
    // The probe measures no slowdown after idling: the base's stays.
    REQUIRE(calibrated.idle_slowdown.points.size() == base.idle_slowdown.points.size());
    for (size_t i = 0; i < base.idle_slowdown.points.size(); ++i)
      CHECK(calibrated.idle_slowdown.points[i].factor ==
            Approx(base.idle_slowdown.points[i].factor));
    // One model with room for it: no run can miss, no served miss is probed, the base's stays.
    const RequestOverhead* was_served = base.front_end.overhead("tiny_cnn");
    const RequestOverhead* now_served = calibrated.front_end.overhead("tiny_cnn");
    REQUIRE((was_served && now_served && was_served->served_miss_load > 0));
    CHECK(now_served->served_miss_load == Approx(was_served->served_miss_load).epsilon(1e-12));
  }
  // The second run's profile pools both probes with the base (calibration/calibration.h).
  std::ifstream second(dir / "out" / "runs" / "p001-r0-calibration.yaml");
  std::string header;
  std::getline(second, header);
  CHECK_THAT(header, Catch::Contains("the 2 calibration probes"));
  runs.options.modes = {"sim"};
  CHECK_THROWS_WITH(runs.run(spec), Catch::Contains("both modes"));
}

// Where a run can miss (two models, room for one), each probe serves misses too, and the
// calibrated profile's served miss takes them in (their pooling: test_calibration).
TEST_CASE("calibration probes served misses where runs can miss", "[experiments][real]") {
  servelab::testutil::TempDir tmp_dir("servelab-calibrate-miss");
  const fs::path dir = tmp_dir.path();
  const std::string profile = (dir / "profile.yaml").string();
  ex::ensure_profile_with(profile, reduced_probe({1, 2}));
  ex::ExperimentSpec spec = ex::parse_experiment(YAML::Load(R"(
name: calibrate-miss-test
modes: [sim, real]
models: {count: 2, prefix: t, profile_model: tiny_cnn}
engine: {workers: 1, max_batch: 2, exec_tier: host, tiers: {host: {models: 1}}}
workload: {requests: 10, arrival: {type: closed, concurrency: 1}, access: {type: sequential}}
)"), (dir / "experiment.yaml").string());
  CalibratedRuns runs(dir, profile);
  ex::RunOutcome out = runs.run(spec);
  REQUIRE(out.failed == 0);
  const config::ProfileFile base = config::load_profile_file(profile);
  const config::ProfileFile calibrated = config::load_profile_file(
      (dir / "out" / "runs" / "p000-r0-calibration.yaml").string());
  const RequestOverhead* was = base.front_end.overhead("tiny_cnn");
  const RequestOverhead* now = calibrated.front_end.overhead("tiny_cnn");
  REQUIRE((was && now && was->served_miss_load > 0));
  CHECK(now->served_miss_load > 0);
  CHECK(now->served_miss_batch > 0);
  // A probe's 16 misses measured exactly the base's 4 on average: not on a real machine.
  CHECK(now->served_miss_load != Approx(was->served_miss_load).epsilon(1e-12));
}

// The textbook reference string (Silberschatz et al., ch. 9) one request at a time over eight
// copies of tiny_cnn with room for three on the host, the first three registered there and
// warmed in model order: by hand, LRU loads 12 times and the offline optimum from those
// three 7. The real engine's run states both, and so does its simulation.
TEST_CASE("a real run states its cache's loads beside the offline optimum, as its simulation",
          "[experiments][real][optimum]") {
  servelab::testutil::TempDir tmp_dir("servelab-real-optimum");
  const fs::path dir = tmp_dir.path();
  const std::string profile = (dir / "profile.yaml").string();
  ex::ensure_profile_with(profile, reduced_probe({1}));
  {
    std::ofstream trace(dir / "trace.csv");
    trace << "model\n";
    for (int m : {7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1}) trace << m << "\n";
  }
  ex::ExperimentSpec spec = ex::parse_experiment(YAML::Load(R"(
name: real-optimum-test
modes: [sim, real]
models: {count: 8, prefix: t, profile_model: tiny_cnn}
engine: {workers: 1, max_batch: 1, exec_tier: host, tiers: {host: {models: 3}}}
policies: {batching: {name: none}, eviction: {name: lru}, scheduling: {name: oldest-first}}
workload:
  requests: 20
  arrival: {type: closed, concurrency: 1}
  access: {type: trace, file: )" + (dir / "trace.csv").string() + R"(, column: model}
)"), (dir / "experiment.yaml").string());
  CalibratedRuns runs(dir, profile);
  runs.options.calibrate_each = false;
  ex::RunOutcome out = runs.run(spec);
  REQUIRE(out.failed == 0);
  for (const char* run : {"p000-sim-r0", "p000-real-r0"}) {
    CAPTURE(run);
    const nlohmann::json s = read_json(dir / "out" / "runs" / run / "summary.json");
    REQUIRE(s.contains("cache_optimum"));
    const nlohmann::json& o = s["cache_optimum"];
    CHECK(o["tier"] == "host");
    CHECK(o["accesses"] == 20);
    CHECK(o["loads"] == 12);
    CHECK(o["optimum_lower"] == 7);
    CHECK(o["optimum_upper"] == 7);
  }
}
