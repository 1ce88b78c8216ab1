// Latency objectives in the engine: deadlines from the model's SLO or the request's own,
// reported per request and in /metrics; late requests served or dropped as configured.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "config/profile_yaml.h"
#include "runtime_test_util.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
using namespace servelab::runtime;
using namespace servelab::runtime::test;

namespace {

bool has_line(const std::string& metrics, const std::string& line) {
  return metrics.find(line + "\n") != std::string::npos;
}

// Options of a request with its own SLO (seconds), nothing else.
RequestOptions slo_of(double seconds) {
  RequestOptions o;
  o.slo = seconds;
  return o;
}

}  // namespace

TEST_CASE("engine SLOs: a request's own SLO wins over its model's, and both are reported",
          "[runtime]") {
  Engine engine(options(1));
  ModelSpec spec = tiny_spec("noop");
  spec.slo = 60.0;  // a minute: every request meets it
  engine.register_model(spec);
  std::vector<float> input(3 * 32 * 32, 0.5f);
  Collector met;
  REQUIRE(engine.submit_raw("noop", input, 1, met.callback()) == 0);
  ClassifyResult r = met.wait(1)[0];
  REQUIRE(r.status == RequestStatus::Ok);
  REQUIRE(r.slo_met.has_value());
  CHECK(*r.slo_met);
  // A nanosecond: no answer can be that fast (served late by default, so still Ok).
  Collector late;
  REQUIRE(engine.submit_raw("noop", input, 1, late.callback(), slo_of(1e-9)) == 0);
  r = late.wait(1)[0];
  CHECK(r.status == RequestStatus::Ok);
  REQUIRE(r.slo_met.has_value());
  CHECK_FALSE(*r.slo_met);
  CHECK(engine.model("noop")->slo == 60.0);
  const std::string m = engine.metrics_text();
  CHECK(has_line(m, "servelab_slo_requests_total{model=\"noop\",outcome=\"met\"} 1"));
  CHECK(has_line(m, "servelab_slo_requests_total{model=\"noop\",outcome=\"missed\"} 1"));
}

TEST_CASE("engine SLOs: with late requests dropped, a request past its deadline never runs",
          "[runtime]") {
  EngineOptions o = options(1);
  o.control.drop_late = true;
  o.slo = 1e-9;  // the engine default: past by the time the control thread sees it
  Engine engine(o);
  engine.register_model(tiny_spec("noop"));
  std::vector<float> input(3 * 32 * 32, 0.5f);
  Collector c;
  REQUIRE(engine.submit_raw("noop", input, 1, c.callback()) == 0);
  const ClassifyResult r = c.wait(1)[0];
  CHECK(r.status == RequestStatus::Dropped);
  CHECK(r.batch_size == 0);
  CHECK(r.error.find("deadline") != std::string::npos);
  CHECK(engine.model("noop")->counters.dropped == 1);
  CHECK(engine.model("noop")->counters.batches == 0);
  CHECK(has_line(engine.metrics_text(), "servelab_request_failures_total{model=\"noop\",reason=\"dropped\"} 1"));
}

TEST_CASE("engine SLOs: rafiki-greedy takes c(b) from the cost profile's entry for the model",
          "[runtime]") {
  // B = {2, 4}, tau = 1 s, delta = 0.1 s. Two queued requests: b = 2, dispatched once
  // c(2) + w(q0) + 0.1 >= 1. With the profile's c(2) = 0.95 s that holds at once; without a
  // prior c(2) is 0 until measured and the batch waits until w(q0) = 0.9 s.
  servelab::testutil::TempDir dir("slo-priors");
  const std::string profile = (dir / "profile.yaml").string();
  {
    std::ofstream(profile) << "models:\n  noop:\n    size_mb: 1\n    batch_latency_ms:\n"
                              "      - {batch: 2, mean: 950, stddev: 0}\n"
                              "      - {batch: 4, mean: 990, stddev: 0}\n";
  }
  for (bool with_prior : {true, false}) {
    EngineOptions o = options(1, "rafiki-greedy", params({{"batch_sizes", "2,4"}, {"slo_ms", "1000"}}));
    if (with_prior) o.cost_profile = std::make_shared<const CostProfile>(config::load_profile(profile));
    Engine engine(o);
    engine.register_model(tiny_spec("noop"));
    std::vector<float> input(3 * 32 * 32, 0.5f);
    Collector c;
    for (int i = 0; i < 2; ++i) REQUIRE(engine.submit_raw("noop", input, 1, c.callback()) == 0);
    for (const ClassifyResult& r : c.wait(2)) {
      REQUIRE(r.status == RequestStatus::Ok);
      CHECK(r.batch_size == 2);
      if (with_prior) CHECK(r.queue_s < 0.5);
      else CHECK(r.queue_s > 0.8);
    }
  }
}

TEST_CASE("engine SLOs: a lone rafiki-greedy request below min(B) is answered once it waited tau",
          "[runtime]") {
  // B = {2, 4}, tau = 0.2 s, nothing else arrives: the request goes alone once it has waited
  // tau instead of waiting for a second arrival that never comes.
  Engine engine(options(1, "rafiki-greedy", params({{"batch_sizes", "2,4"}, {"slo_ms", "200"}})));
  engine.register_model(tiny_spec("noop"));
  std::vector<float> input(3 * 32 * 32, 0.5f);
  Collector c;
  REQUIRE(engine.submit_raw("noop", input, 1, c.callback()) == 0);
  const ClassifyResult r = c.wait(1)[0];
  CHECK(r.status == RequestStatus::Ok);
  CHECK(r.batch_size == 1);
  CHECK(r.queue_s >= 0.199);
  CHECK(engine.model("noop")->counters.batches == 1);
}
