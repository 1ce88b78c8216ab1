// Latency objectives over HTTP: a model's SLO at registration (kept across restarts), a
// request's own X-SLO-Ms, whether each answer met it, and malformed values refused.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/integration/server/server_fixture.h"

using namespace servelab::testing;
using nlohmann::json;

TEST_CASE("SLOs over HTTP: registration slo_ms, X-SLO-Ms, slo_met, kept across a restart",
          "[server][api][slo]") {
  TempDir store;
  const std::string jpg = read_file(image_file("gradient.jpg"));
  {
    TestServer ts(store.path.string());
    HttpClient c(ts.port());
    std::vector<FormField> form = register_form("noop", "noop");
    form.push_back({"slo_ms", "60000", ""});  // a minute: met by every answer here
    auto reg = c.post_form("/register", form);
    INFO(reg.body);
    REQUIRE(reg.status == 201);
    CHECK(json::parse(reg.body)["slo_ms"] == 60000.0);
    auto res = c.request("POST", "/classify/noop", jpg);
    REQUIRE(res.status == 200);
    CHECK(json::parse(res.body)["slo_met"] == true);
    // The request's own objective wins: a microsecond is missed (served late by default).
    c.set_header("X-SLO-Ms", "0.001");
    res = c.request("POST", "/classify/noop", jpg);
    REQUIRE(res.status == 200);
    CHECK(json::parse(res.body)["slo_met"] == false);
    for (const char* bad : {"abc", "-5", "0", "1e400", "5ms", "nan"}) {
      c.set_header("X-SLO-Ms", bad);
      auto r = c.request("POST", "/classify/noop", jpg);
      CHECK(r.status == 400);
      CHECK_THAT(r.body, Catch::Contains("X-SLO-Ms"));
    }
    const std::string metrics = c.get("/metrics").body;
    CHECK(metric_sum(metrics, "servelab_slo_requests_total{model=\"noop\",outcome=\"met\"") == 1);
    CHECK(metric_sum(metrics, "servelab_slo_requests_total{model=\"noop\",outcome=\"missed\"") == 1);
    // A bad registration SLO is refused with the field named.
    std::vector<FormField> bad = register_form("noop2", "noop");
    bad.push_back({"slo_ms", "-1", ""});
    auto refused = c.post_form("/register", bad);
    CHECK(refused.status == 400);
    CHECK_THAT(refused.body, Catch::Contains("slo_ms"));
  }
  TestServer ts(store.path.string());  // restarted from the registry
  HttpClient c(ts.port());
  CHECK(json::parse(c.get("/models/noop").body)["slo_ms"] == 60000.0);
  auto res = c.request("POST", "/classify/noop", jpg);
  REQUIRE(res.status == 200);
  CHECK(json::parse(res.body)["slo_met"] == true);
}

TEST_CASE("SLOs over the v2 protocol: the slo_ms request parameter and X-SLO-Ms",
          "[server][v2][slo]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  REQUIRE(c.post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);
  auto body = [](const json& parameters) {
    json in = {{"name", "INPUT__0"}, {"datatype", "FP32"}, {"shape", {1, 3, 32, 32}},
               {"data", std::vector<float>(3 * 32 * 32, 0.25f)}};
    json j = {{"inputs", {in}}};
    if (!parameters.is_null()) j["parameters"] = parameters;
    return j.dump();
  };
  CHECK(c.post_json("/v2/models/cnn/infer", body({{"slo_ms", 60000}})).status == 200);  // met
  CHECK(c.post_json("/v2/models/cnn/infer", body({{"slo_ms", 0.001}})).status == 200);  // missed
  c.set_header("X-SLO-Ms", "60000");
  CHECK(c.post_json("/v2/models/cnn/infer", body(json())).status == 200);  // met, by the header
  auto bad = c.post_json("/v2/models/cnn/infer", body({{"slo_ms", -1}}));
  CHECK(bad.status == 400);
  CHECK_THAT(bad.body, Catch::Contains("slo_ms"));
  const std::string metrics = c.get("/metrics").body;
  CHECK(metric_sum(metrics, "servelab_slo_requests_total{model=\"cnn\",outcome=\"met\"") == 2);
  CHECK(metric_sum(metrics, "servelab_slo_requests_total{model=\"cnn\",outcome=\"missed\"") == 1);
  CHECK(metric_sum(metrics, "servelab_slo_attainment{model=\"cnn\"") == Approx(2.0 / 3));
}

TEST_CASE("SLOs over HTTP: a late request dropped by policy answers 504 saying so",
          "[server][api][slo]") {
  TempDir store;
  TestServer ts(store.path.string(), [](servelab::runtime::EngineOptions& e, auto&) {
    e.control.drop_late = true;
    e.slo = 1e-9;  // past by the time its model takes a worker
  });
  HttpClient c(ts.port());
  REQUIRE(c.post_form("/register", register_form("noop", "noop")).status == 201);
  auto res = c.request("POST", "/classify/noop", read_file(image_file("gradient.jpg")));
  CHECK(res.status == 504);
  const json j = json::parse(res.body);
  CHECK(j["status"] == "dropped");
  CHECK_THAT(j["error"].get<std::string>(), Catch::Contains("deadline"));
  CHECK(metric_sum(c.get("/metrics").body,
                   "servelab_request_failures_total{model=\"noop\",reason=\"dropped\"") == 1);
}
