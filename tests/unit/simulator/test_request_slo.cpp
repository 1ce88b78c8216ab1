// Latency objectives per model and per request: a record's own SLO wins over the run's in the
// summary, requests.csv carries each request's deadline, and a model's SLO (models[].slo_ms)
// reaches the simulated controller as its requests' deadlines. Ground truth by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "config/run_config.h"
#include "results/records.h"
#include "sim_test_util.h"
#include "tests/support/temp_dir.h"

using namespace servelab;
using namespace servelab::results;

namespace {

// Latencies: a 10 ms (own SLO 5 ms: missed), a 30 ms (own 50: met), b 20 ms (the run's 25:
// met), b a timeout (own 100: missed).
RunRecords mixed_slos() {
  RunRecords run;
  run.model_names = {"a", "b"};
  run.requests.push_back({0, 0, 0.000, 0.001, 0.001, 0.010, 1, false, RequestStatus::Ok});
  run.requests.push_back({1, 0, 0.010, 0.011, 0.012, 0.040, 2, false, RequestStatus::Ok});
  run.requests.push_back({2, 1, 0.020, 0.021, 0.021, 0.040, 2, false, RequestStatus::Ok});
  run.requests.push_back({3, 1, 0.030, NAN, NAN, 0.130, 0, false, RequestStatus::Timeout});
  run.requests[0].slo = 0.005;
  run.requests[1].slo = 0.050;
  run.requests[3].slo = 0.100;
  run.slo = 0.025;
  return run;
}

std::string bytes(const std::string& path) {
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("a request's own SLO wins over the run's in every summary", "[results]") {
  nlohmann::json s = summarize(mixed_slos());
  CHECK(s["slo_attainment"].get<double>() == Approx(2.0 / 4));
  CHECK(s["overdue"] == 2);
  CHECK_FALSE(s.contains("slo_ms"));  // four requests, three different SLOs
  const nlohmann::json& a = s["per_model"]["a"];
  CHECK(a["slo_attainment"].get<double>() == Approx(0.5));
  CHECK_FALSE(a.contains("slo_ms"));
  const nlohmann::json& b = s["per_model"]["b"];
  CHECK(b["overdue"] == 1);
  CHECK_FALSE(b.contains("slo_ms"));  // 25 and 100

  // Without the run's SLO, request 2 has none: attainment is over the three that do.
  RunRecords own_only = mixed_slos();
  own_only.slo.reset();
  nlohmann::json o = summarize(own_only);
  CHECK(o["slo_attainment"].get<double>() == Approx(1.0 / 3));
  CHECK(o["overdue"] == 2);
  CHECK(o["per_model"]["b"]["slo_ms"].get<double>() == Approx(100));  // its one request
  CHECK(o["per_model"]["b"]["slo_attainment"].get<double>() == 0);

  // No SLO anywhere: no SLO fields.
  RunRecords none = mixed_slos();
  none.slo.reset();
  for (RequestRecord& r : none.requests) r.slo = NAN;
  CHECK_FALSE(summarize(none).contains("slo_attainment"));
}

TEST_CASE("requests.csv carries each request's deadline when a request has its own SLO",
          "[results]") {
  servelab::testutil::TempDir tmp("servelab-results-deadline");
  const std::string path = (tmp.path() / "requests.csv").string();
  RunRecords run = mixed_slos();
  run.requests[0].accuracy = 1;
  write_requests_csv(path, run);
  std::ifstream in(path);
  std::string header, first, third;
  std::getline(in, header);
  std::getline(in, first);
  std::getline(in, third);
  std::getline(in, third);
  CHECK(header == "id,model,arrival,queued,dispatch,start,finish,batch_size,waited_for_load,"
                  "status,deadline,accuracy");
  CHECK(first == "0,a,0.000000000,,0.001000000,0.001000000,0.010000000,1,0,ok,0.005000000,1");
  CHECK(third == "2,b,0.020000000,,0.021000000,0.021000000,0.040000000,2,0,ok,,");

  RunRecords back = read_requests_csv(path);
  REQUIRE(back.requests.size() == 4);
  CHECK(back.requests[1].slo == Approx(0.050));
  CHECK(std::isnan(back.requests[2].slo));
  CHECK(back.requests[3].slo == Approx(0.100));
  CHECK(back.requests[0].accuracy == 1);

  // The streamed writer writes the same bytes when asked for both columns.
  const std::string streamed = (tmp.path() / "streamed.csv").string();
  {
    RequestsCsvStream rows(streamed, run.model_names, true, true);
    for (const RequestRecord& r : run.requests) rows.add(r);
    rows.close();
  }
  CHECK(bytes(streamed) == bytes(path));
}

// One worker, both models resident, batching none, 125 ms per request. Model m0 has its own
// SLO, m1 none, the run none. Sends: m0 at 0, m1 at 0.01, m0 at 0.02; served in that order:
// 0..0.125, 0.125..0.25, 0.25..0.375. With m0's SLO 0.3 s, request 2 (355 ms) misses; with
// 0.2 s and late requests dropped, it is dropped at its deadline 0.22, before its start.
TEST_CASE("a model's own SLO gives its requests their deadlines in the simulator",
          "[simulator]") {
  sim::SimulationSetup s = sim::test::cache_setup(2, 2, sim::test::constant_profile(0.125));
  s.models[0].slo = 0.3;
  workloads::Workload w = sim::test::arrivals({0, 0.01, 0.02});
  w.models = {0, 1, 0};
  sim::SimulationResult r = sim::simulate(s, w);
  REQUIRE(r.violations.empty());
  const auto& q = r.records.requests;
  REQUIRE(q.size() == 3);
  CHECK(q[0].slo == 0.3);
  CHECK(std::isnan(q[1].slo));
  CHECK(q[2].finish == Approx(0.375));
  nlohmann::json sum = summarize(r.records);
  CHECK(sum["slo_ms"].get<double>() == Approx(300));
  CHECK(sum["slo_attainment"].get<double>() == Approx(0.5));
  CHECK(sum["per_model"]["m0"]["overdue"] == 1);
  CHECK_FALSE(sum["per_model"]["m1"].contains("slo_attainment"));

  s.models[0].slo = 0.2;
  s.control.drop_late = true;
  sim::SimulationResult d = sim::simulate(s, w);
  REQUIRE(d.records.requests.size() == 3);
  CHECK(d.records.requests[2].status == RequestStatus::Dropped);
  CHECK(d.records.requests[2].finish == Approx(0.22));
  CHECK(d.records.requests[1].status == RequestStatus::Ok);  // no SLO: never late
}

TEST_CASE("models[].slo_ms is read, bounded and written back", "[config]") {
  const char* text = R"(
profile: p.yaml
models: [{name: a, slo_ms: 40}, b]
engine: {slo_ms: 100}
workload: {requests: 10, arrival: {type: poisson, rate: 5}, access: {type: uniform}}
)";
  config::RunConfig c = config::parse_run_config(YAML::Load(text), "t.yaml", ".");
  REQUIRE(c.models[0].slo);
  CHECK(*c.models[0].slo == Approx(0.040));
  CHECK_FALSE(c.models[1].slo);
  YAML::Node out = config::emit_run_config(c);
  CHECK(out["models"][0]["slo_ms"].as<double>() == 40);
  CHECK_FALSE(out["models"][1]["slo_ms"]);
  config::RunConfig again = config::parse_run_config(out, "t.yaml", ".");
  CHECK(*again.models[0].slo == *c.models[0].slo);

  YAML::Node bad = YAML::Load(text);
  bad["models"][0]["slo_ms"] = -1;
  CHECK_THROWS_WITH(config::parse_run_config(bad, "t.yaml", "."),
                    Catch::Matchers::Contains("models.0.slo_ms"));
}
