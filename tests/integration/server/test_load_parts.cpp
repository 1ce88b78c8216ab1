// A cold start split as TrIMS and PRETZEL split it: the answer of a request whose batch waited
// for its model's load gives the load's phases (read, deserialize, copy, share), and /metrics
// sums them per model. Checked for form: the phases that ran are there, the others are zero,
// and together they fit in the request's load wait.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "tests/integration/server/http_client.h"
#include "tests/integration/server/server_fixture.h"

using namespace servelab::testing;
using nlohmann::json;

namespace {

// Two models with room for one in host memory: the second's first request waits for a load
// from disk. Returns that answer.
json cold_answer(uint16_t port, const std::string& model) {
  HttpClient c(port);
  for (const char* name : {"first", "second"})
    REQUIRE(c.post_form("/register", register_form(name, model)).status == 201);
  const auto r = c.request("POST", "/classify/second", read_file(image_file("gradient.jpg")),
                           "image/jpeg");
  INFO(r.body);
  REQUIRE(r.status == 200);
  return json::parse(r.body);
}

auto one_model_in_host(const std::string& weight_store) {
  return [weight_store](servelab::runtime::EngineOptions& eo, auto&) {
    eo.control.budgets[int(servelab::Tier::Host)].models = 1;
    eo.weight_store = weight_store;
  };
}

}  // namespace

TEST_CASE("a cold request's answer splits its load into read and deserialize", "[server][load]") {
  TempDir dir;
  TestServer ts((dir.path / "store").string(), one_model_in_host(""));
  const json a = cold_answer(ts.port(), "tiny_cnn");
  REQUIRE(a.contains("load_parts_ms"));
  const json& p = a["load_parts_ms"];
  CHECK(p["read"].get<double>() > 0);
  CHECK(p["deserialize"].get<double>() > 0);
  CHECK(p["copy"].get<double>() == 0);   // a CPU server has no device tier
  CHECK(p["share"].get<double>() == 0);  // no weight store
  const double sum = p["read"].get<double>() + p["deserialize"].get<double>();
  CHECK(sum <= a["load_ms"].get<double>() + 1e-6);

  const std::string m = HttpClient(ts.port()).get("/metrics").body;
  CHECK(metric_sum(m, "servelab_model_load_seconds_total{model=\"second\",phase=\"read\"}") > 0);
  CHECK(metric_sum(m, "servelab_model_load_seconds_total{model=\"second\",phase=\"deserialize\"}") > 0);
  CHECK(metric_sum(m, "servelab_model_load_seconds_total{model=\"second\",phase=\"copy\"}") == 0);
}

TEST_CASE("with a weight store the cold load's blobs are the share phase", "[server][load][weights]") {
  TempDir dir;
  TestServer ts((dir.path / "store").string(), one_model_in_host((dir.path / "weights").string()));
  const json a = cold_answer(ts.port(), "tiny_variant_0");
  REQUIRE(a.contains("load_parts_ms"));
  const json& p = a["load_parts_ms"];
  CHECK(p["share"].get<double>() > 0);
  CHECK(p["deserialize"].get<double>() > 0);
  CHECK(p["copy"].get<double>() == 0);
  const double sum = p["read"].get<double>() + p["deserialize"].get<double>() + p["share"].get<double>();
  CHECK(sum <= a["load_ms"].get<double>() + 1e-6);
}

TEST_CASE("a warm request's answer has no load split", "[server][load]") {
  TempDir dir;
  TestServer ts((dir.path / "store").string());
  HttpClient c(ts.port());
  REQUIRE(c.post_form("/register", register_form("warm", "tiny_cnn")).status == 201);
  const auto r = c.request("POST", "/classify/warm", read_file(image_file("gradient.jpg")), "image/jpeg");
  REQUIRE(r.status == 200);
  const json a = json::parse(r.body);
  CHECK(a["load_ms"].get<double>() == 0);
  CHECK_FALSE(a.contains("load_parts_ms"));
}

TEST_CASE("with private weights every request loads its own copy from the file",
          "[server][load][private]") {
  TempDir dir;
  TestServer shared((dir.path / "shared").string());
  TestServer faas((dir.path / "private").string(),
                  [](servelab::runtime::EngineOptions& eo, auto&) { eo.private_weights = true; });
  const std::string image = read_file(image_file("gradient.jpg"));
  HttpClient s(shared.port()), p(faas.port());
  REQUIRE(s.post_form("/register", register_form("m", "tiny_cnn")).status == 201);
  REQUIRE(p.post_form("/register", register_form("m", "tiny_cnn")).status == 201);
  const json warm = json::parse(s.request("POST", "/classify/m", image, "image/jpeg").body);
  for (int i = 0; i < 3; ++i) {  // the registration's copy and earlier batches' serve none
    const auto r = p.request("POST", "/classify/m", image, "image/jpeg");
    INFO(r.body);
    REQUIRE(r.status == 200);
    const json a = json::parse(r.body);
    REQUIRE(a.contains("load_parts_ms"));
    CHECK(a["load_parts_ms"]["read"].get<double>() > 0);
    CHECK(a["load_parts_ms"]["deserialize"].get<double>() > 0);
    const double parts = a["load_parts_ms"]["read"].get<double>() +
                         a["load_parts_ms"]["deserialize"].get<double>();
    CHECK(a["load_ms"].get<double>() >= parts - 1e-6);
    CHECK(a["top"][0]["label"] == warm["top"][0]["label"]);  // the same model computed
  }
  const std::string m = p.get("/metrics").body;  // the three loads' phases, summed
  CHECK(metric_sum(m, "servelab_model_load_seconds_total{model=\"m\",phase=\"deserialize\"}") > 0);
}

TEST_CASE("private weights refuse a tier budget and a weight store", "[server][load][private]") {
  TempDir dir;
  auto refused = [](servelab::runtime::EngineOptions eo) {
    eo.private_weights = true;
    try {
      servelab::runtime::Engine engine(eo);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  servelab::runtime::EngineOptions budget;
  budget.control.budgets[int(servelab::Tier::Host)].models = 2;
  CHECK_THAT(refused(budget), Catch::Matchers::Contains("engine.tiers.host") && Catch::Matchers::Contains("unlimited"));
  servelab::runtime::EngineOptions store;
  store.weight_store = (dir.path / "weights").string();
  CHECK_THAT(refused(store), Catch::Matchers::Contains("weight store"));
}
