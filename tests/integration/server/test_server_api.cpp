// The server's REST API with the real Engine over 127.0.0.1: register (JSON path and
// multipart upload), classify, list, get, delete, health, metrics, restart from the registry.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/store/digest.h"
#include "tests/integration/server/server_fixture.h"

using namespace servelab::testing;
using nlohmann::json;
namespace fs = std::filesystem;

TEST_CASE("register, classify, list and delete models", "[server][api]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());

  auto reg = c.post_json("/register", register_json("cnn", "tiny_cnn"));
  INFO(reg.body);
  REQUIRE(reg.status == 201);
  json r = json::parse(reg.body);
  CHECK(r["checksum"] == servelab::store::Sha256::hex_file(model_file("tiny_cnn")));
  CHECK(r["num_labels"] == 10);
  CHECK(r["param_bytes"].get<uint64_t>() > 0);
  CHECK(fs::exists(r["file"].get<std::string>()));
  CHECK(fs::path(r["file"].get<std::string>()).parent_path() == fs::canonical(store.path));

  auto up = c.post_form("/register", register_form("noop", "noop"));
  INFO(up.body);
  REQUIRE(up.status == 201);
  CHECK(json::parse(up.body)["checksum"] == servelab::store::Sha256::hex_file(model_file("noop")));

  json list = json::parse(c.get("/models").body)["models"];
  REQUIRE(list.size() == 2);
  for (const auto& m : list) CHECK(m["state"] == "ready");

  auto one = c.get("/models/cnn");
  REQUIRE(one.status == 200);
  json m = json::parse(one.body);
  CHECK(m["labels"].size() == 10);
  CHECK(m["labels"][0] == "tiny_cnn_class_0");
  CHECK(m["size_bytes"].get<uint64_t>() >= m["param_bytes"].get<uint64_t>());
  CHECK(m["preprocess"]["input_width"] == 32);
  CHECK(m.contains("resident"));
  CHECK(m.contains("counters"));

  std::string jpg = read_file(image_file("gradient.jpg"));
  auto cls = c.request("POST", "/classify/cnn?top_k=3", jpg, "image/jpeg");
  INFO(cls.body);
  REQUIRE(cls.status == 200);
  json out = json::parse(cls.body);
  REQUIRE(out["top"].size() == 3);
  double prev = 2, total = 0;
  for (const auto& t : out["top"]) {
    CHECK(t["label"].get<std::string>().rfind("tiny_cnn_class_", 0) == 0);
    double s = t["score"].get<double>();
    CHECK(s <= prev);
    prev = s;
    total += s;
  }
  CHECK(total <= 1.0001);
  CHECK(out["batch_size"].get<int>() >= 1);
  for (const char* k : {"queue_ms", "load_ms", "compute_ms"}) CHECK(out[k].get<double>() >= 0);
  CHECK(out["compute_ms"].get<double>() > 0);

  // Default top_k, and every sample image format decodes.
  for (const char* img : {"disk.png", "gray.png", "rgba.png", "small.png", "noise_portrait.jpg"}) {
    auto res = c.request("POST", "/classify/noop", read_file(image_file(img)), "image/png");
    INFO(img << ": " << res.body);
    CHECK(res.status == 200);
    CHECK(json::parse(res.body)["top"].size() == 5);
  }
  CHECK(c.connections_opened() == 1);  // keep-alive throughout

  auto del = c.request("DELETE", "/models/noop");
  CHECK(del.status == 200);
  CHECK(c.get("/models/noop").status == 404);
  CHECK(c.request("POST", "/classify/noop", jpg).status == 404);
  CHECK(c.request("DELETE", "/models/noop").status == 404);
  CHECK_FALSE(fs::exists(store.path / "noop.pt"));
  CHECK(json::parse(c.get("/models").body)["models"].size() == 1);
  // The name is free again.
  CHECK(c.post_form("/register", register_form("noop", "noop")).status == 201);

  auto health = c.get("/health");
  CHECK(health.status == 200);
  CHECK(json::parse(health.body)["models"] == 2);

  auto metrics = c.get("/metrics");
  REQUIRE(metrics.status == 200);
  CHECK(metrics.headers["content-type"].rfind("text/plain", 0) == 0);
  CHECK(metric_sum(metrics.body, "servelab_http_requests_total{route=\"/classify/{name}\",code=\"200\"}") == 6);
  CHECK(metric_sum(metrics.body, "servelab_http_requests_total{route=\"/register\",code=\"201\"}") == 3);
  CHECK(metric_sum(metrics.body, "servelab_requests_completed_total{model=\"cnn\"}") == 1);
}

TEST_CASE("a restarted server registers the registry's models again", "[server][api][restart]") {
  TempDir store;
  std::string jpg = read_file(image_file("gradient.jpg"));
  std::string before;
  {
    TestServer ts(store.path.string());
    HttpClient c(ts.port());
    REQUIRE(c.post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);
    REQUIRE(c.post_form("/register", register_form("noop", "noop")).status == 201);
    REQUIRE(c.post_form("/register", register_form("noop2", "noop")).status == 201);
    auto res = c.request("POST", "/classify/cnn", jpg);
    REQUIRE(res.status == 200);
    before = json::parse(res.body)["top"].dump();
  }
  // Break one model file behind the server's back: it must be skipped, its row kept.
  std::ofstream(store.path / "noop2.pt", std::ios::binary | std::ios::trunc) << "garbage";

  TestServer ts(store.path.string());
  CHECK(ts.restore.restored.size() == 2);
  REQUIRE(ts.restore.skipped.size() == 1);
  CHECK(ts.restore.skipped[0].first == "noop2");
  CHECK_THAT(ts.restore.skipped[0].second, Catch::Contains("checksum"));

  HttpClient c(ts.port());
  auto res = c.request("POST", "/classify/cnn", jpg);
  REQUIRE(res.status == 200);
  CHECK(json::parse(res.body)["top"].dump() == before);  // same model, same answer
  CHECK(c.request("POST", "/classify/noop", jpg).status == 200);
  CHECK(c.request("POST", "/classify/noop2", jpg).status == 404);
  json broken = json::parse(c.get("/models/noop2").body);
  CHECK(broken["state"] == "unavailable");
  CHECK(json::parse(c.get("/health").body)["unavailable_models"] == 1);
  CHECK(json::parse(c.get("/models").body)["models"].size() == 3);
  // A re-registration under the broken name is a duplicate until the row is deleted.
  CHECK(c.post_form("/register", register_form("noop2", "noop")).status == 409);
  CHECK(c.request("DELETE", "/models/noop2").status == 200);
  CHECK(c.post_form("/register", register_form("noop2", "noop")).status == 201);
  CHECK(c.request("POST", "/classify/noop2", jpg).status == 200);
}
