// The profiler's probes of the served path. A probe measures this machine, so its tests check
// the form of what it returns (it ran, a value per request or turn, finite, within the bounds
// its construction sets) and the lower bounds that known sleeps guarantee on any machine
// (a profiled model's batch or load sleeps at least its profile's time). How large a figure
// comes out is the machine's, for the profile and the reports, never asserted here.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "config/profile_yaml.h"
#include "calibration/profiler.h"
#include "calibration/served_probe.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
namespace fs = std::filesystem;

namespace {

// The request image the probes send (models/images/gradient.jpg).
std::string gradient_image() {
  std::ifstream in(std::string(SERVELAB_SOURCE_DIR) + "/models/images/gradient.jpg",
                   std::ios::binary);
  REQUIRE(in);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

}  // namespace

TEST_CASE("the model overhead leaves out the batch's compute", "[experiments][overhead]") {
  servelab::testutil::TempDir tmp_dir("servelab-overhead-test");
  const std::filesystem::path dir = tmp_dir.path();
  std::ofstream(dir / "slow.yaml") << "models:\n  slow:\n    size_bytes: 1\n"
                                      "    batch_latency_ms: [{batch: 1, mean: 30}]\n"
                                      "    load_ms: {disk->host: 0}\n";
  const std::string image = gradient_image();

  runtime::EngineOptions eo;
  eo.executor = "profiled";
  eo.cost_profile = std::make_shared<const CostProfile>(config::load_profile((dir / "slow.yaml").string()));
  runtime::ModelSpec spec;
  spec.name = "slow";
  spec.file = (dir / "slow.pt").string();  // never read by the profiled executor
  const experiments::ModelOverhead o = experiments::measure_model_overhead(eo, spec, image, 20);
  const experiments::RoundTrip probe = experiments::measure_round_trip(image, 20);
  CAPTURE(o.seconds, o.stddev, probe.seconds);
  // dispatch - arrival of answered requests: before the batch, so at least 0 and finite.
  CHECK(std::isfinite(o.seconds));
  CHECK(o.seconds >= 0);
  CHECK(std::isfinite(o.stddev));
  CHECK(o.stddev >= 0);
  // The zero-cost probe's round trip: the whole served path, answered.
  CHECK(std::isfinite(probe.seconds));
  CHECK(probe.seconds > 0);

  // A model that cannot be served: the error names it, nothing is left running.
  spec.name = "missing";
  CHECK_THROWS(experiments::measure_model_overhead(eo, spec, image, 5));
}

TEST_CASE("cold bursts: each request's intake, from the start of its burst",
          "[experiments][overhead]") {
  const std::string image = gradient_image();
  const double quantum = 0.1;
  const auto bursts = experiments::measure_cold_bursts(image, {1, 4}, 2, quantum);
  REQUIRE(bursts.size() == 4);
  for (size_t i = 0; i < bursts.size(); ++i) {
    CAPTURE(i, bursts[i]);
    CHECK(bursts[i].size() == (i < 2 ? 1u : 4u));
    // A request's intake lies between its burst's start and the first tick after it.
    for (double t : bursts[i]) {
      CHECK(std::isfinite(t));
      CHECK(t >= 0);
      CHECK(t <= quantum);
    }
  }
  CHECK_THROWS(experiments::measure_cold_bursts(image, {2}, 1, 0));
}

// measure_served_idle on tiny_cnn (scripts/make-models --tiny), ticked (quantum mode) and
// event-driven: a turn per asked turn, each with its worker's idle gap and the served batch's
// cost over back to back, and the summary their mean.
TEST_CASE("served at one in flight: the worker's idle gap and its cost over back to back",
          "[experiments][overhead]") {
  const std::string models = std::string(SERVELAB_SOURCE_DIR) + "/models";
  const std::string image = gradient_image();
  experiments::ProfileOptions po;
  po.models_dir = models;
  const runtime::ModelSpec spec = experiments::model_spec(po, "tiny_cnn");
  // The manifest's whole preprocessing (as real runs register the model), not only its size.
  const nlohmann::json manifest =
      nlohmann::json::parse(std::ifstream(models + "/tiny_cnn.json"));
  CHECK(spec.preprocess.input_width == manifest["input_width"].get<int>());
  CHECK(spec.preprocess.resize == manifest["resize"].get<int>());
  CHECK(spec.labels.size() == manifest["classes"].get<size_t>());
  runtime::EngineOptions eo;
  eo.executor = "torch";
  eo.device = "cpu";
  eo.control.max_batch = 1;
  eo.control.quantum = 0.025;
  const experiments::ServedIdle ticked = experiments::measure_served_idle(eo, spec, image, 2, 12);
  eo.control.quantum = 0;
  const experiments::ServedIdle event = experiments::measure_served_idle(eo, spec, image, 1, 12);
  CAPTURE(ticked.gap, ticked.factor, event.gap, event.factor);
  REQUIRE(ticked.turns.size() == 2);
  REQUIRE(event.turns.size() == 1);
  // Each turn's gap and factor: finite, a gap of no less than nothing, a positive factor.
  for (const auto* s : {&ticked, &event})
    for (const auto& t : s->turns) {
      CHECK(std::isfinite(t.gap));
      CHECK(t.gap >= 0);
      CHECK(std::isfinite(t.factor()));
      CHECK(t.factor() > 0);
    }
  CHECK(ticked.factor == Approx((ticked.turns[0].factor() + ticked.turns[1].factor()) / 2));
  CHECK(ticked.gap == Approx((ticked.turns[0].gap + ticked.turns[1].gap) / 2));
  CHECK(ticked.served ==
        Approx((ticked.turns[0].served + ticked.turns[1].served) / 2));  // median of two
  CHECK(ticked.served > 0);

  // The profiler's use: the ticked loop's point, before it the event-driven loop's where its
  // gap is shorter, and the served batch itself into the overhead.
  po.served_idle_turns = 1;
  po.served_idle_turn_seconds = 0.2;
  RequestOverhead overhead;
  std::vector<std::string> lines;
  const IdleSlowdown point = experiments::served_idle_of(
      po, spec, 1e-4, image, overhead, [&](const std::string& l) { lines.push_back(l); });
  REQUIRE(!point.points.empty());
  REQUIRE(point.points.size() <= 2);
  CHECK_NOTHROW(point.validate());
  for (const auto& p : point.points) {
    CHECK(std::isfinite(p.gap));
    CHECK(p.gap > 0);
    CHECK(p.factor > 0);
  }
  // Both loops were measured and said so, ticked first.
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].find("ticking every 10.0") != std::string::npos);
  CHECK(lines[1].find("event-driven") != std::string::npos);
  CHECK(std::isfinite(overhead.served_idle_batch));
  CHECK(overhead.served_idle_batch > 0);

  // Nothing to measure: no turns.
  CHECK(experiments::measure_served_idle(eo, spec, image, 0, 12).turns.empty());
  // A model that cannot be served: the error names it, nothing is left running.
  runtime::ModelSpec missing = spec;
  missing.file = models + "/no_such_model.pt";
  CHECK_THROWS(experiments::measure_served_idle(eo, missing, image, 1, 4));
}

// measure_served_miss on a profiled model whose loads sleep 40 ms and batches of 1 sleep
// 15 ms (ground truth: the profile): two copies with room for one, one request in flight, so
// every request waits for an eviction and a load of its copy.
TEST_CASE("served misses: each request waits for its copy's load, then computes",
          "[experiments][overhead]") {
  servelab::testutil::TempDir tmp_dir("servelab-served-miss-test");
  const std::filesystem::path dir = tmp_dir.path();
  const std::string costs = ":\n    size_bytes: 1\n    batch_latency_ms: [{batch: 1, mean: 15}]\n"
                            "    load_ms: {disk->host: 40}\n";
  std::ofstream(dir / "two.yaml") << "models:\n  m" << costs << "  m-2" << costs;
  const std::string image = gradient_image();
  runtime::EngineOptions eo;
  eo.executor = "profiled";
  eo.cost_profile = std::make_shared<const CostProfile>(config::load_profile((dir / "two.yaml").string()));
  eo.control.max_batch = 1;
  runtime::ModelSpec spec;
  spec.name = "m";
  spec.file = (dir / "m.pt").string();  // never read by the profiled executor
  const experiments::ServedMiss miss = experiments::measure_served_miss(eo, spec, image, 8);
  CAPTURE(miss.load, miss.batch);
  CHECK(miss.misses == 8);
  // Lower bounds only: the profiled loader and batch sleep at least their profile's times.
  CHECK(miss.load > 0.039);
  CHECK(std::isfinite(miss.load));
  CHECK(miss.batch > 0.0145);
  CHECK(std::isfinite(miss.batch));
  // Each miss's wait, kept: the profiled loader's 40 ms at least, the mean their mean.
  REQUIRE(miss.loads.size() == 8);
  double sum = 0;
  for (double x : miss.loads) {
    CHECK(x > 0.039);
    sum += x;
  }
  CHECK(sum / 8 == Approx(miss.load));
  CHECK(experiments::measure_served_miss(eo, spec, image, 0).misses == 0);
}
