// Every bad input gets its status and a JSON error, and the server keeps serving afterwards.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/integration/server/server_fixture.h"

using namespace servelab::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Checks status and that the body is {"error": "<non-empty>"}.
void expect_error(const ClientResponse& r, int status) {
  INFO("status " << r.status << " body " << r.body);
  CHECK(r.status == status);
  json j = json::parse(r.body, nullptr, false);
  REQUIRE(j.is_object());
  REQUIRE(j.contains("error"));
  CHECK_FALSE(j["error"].get<std::string>().empty());
}

std::string json_path_body(const std::string& name, const std::string& path) {
  return json{{"name", name}, {"path", path}}.dump();
}

}  // namespace

TEST_CASE("bad inputs get their status and the server keeps serving", "[server][errors]") {
  TempDir store;
  TestServer ts(store.path.string(), [](auto&, servelab::server::ServerOptions& so) {
    so.max_body_bytes = 256 * 1024;
  });
  HttpClient c(ts.port());
  REQUIRE(c.post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);
  std::string jpg = read_file(image_file("gradient.jpg"));

  // Classification.
  expect_error(c.request("POST", "/classify/nope", jpg), 404);
  expect_error(c.request("POST", "/classify/cnn", read_file(bad_file("not_an_image.jpg"))), 400);
  expect_error(c.request("POST", "/classify/cnn", ""), 400);
  expect_error(c.request("POST", "/classify/cnn?top_k=abc", jpg), 400);
  expect_error(c.request("POST", "/classify/cnn?top_k=0", jpg), 400);

  // Models that cannot be registered leave nothing behind.
  for (const char* bad : {"corrupt.pt", "not_torchscript.pt", "empty.pt"}) {
    INFO(bad);
    expect_error(c.post_json("/register", json_path_body("broken", bad_file(bad))), 400);
    expect_error(c.post_form("/register", {{"name", "broken", ""},
                                           {"model", read_file(bad_file(bad)), bad}}),
                 400);
  }
  expect_error(c.post_json("/register", register_json("broken", "fails")), 400);
  CHECK(c.get("/models/broken").status == 404);
  CHECK_FALSE(fs::exists(store.path / "broken.pt"));
  expect_error(c.post_json("/register", json_path_body("broken", "/no/such/file.pt")), 400);

  // Names.
  expect_error(c.post_json("/register", register_json("cnn", "tiny_cnn")), 409);
  expect_error(c.post_form("/register", register_form("cnn", "noop")), 409);
  for (const std::string& name : std::vector<std::string>{
           "", "a/b", "../escape", ".hidden", "has space", std::string(65, 'n')}) {
    INFO("name '" << name << "'");
    expect_error(c.post_json("/register", register_json(name, "noop")), 400);
  }
  CHECK(json::parse(c.get("/models").body)["models"].size() == 1);

  // Malformed bodies.
  expect_error(c.post_json("/register", "{\"name\": "), 400);
  expect_error(c.post_json("/register", "[]"), 400);
  expect_error(c.request("POST", "/register", "x", "multipart/form-data"), 400);
  expect_error(c.request("POST", "/register", "--b\r\nbroken", "multipart/form-data; boundary=b"), 400);
  expect_error(c.request("POST", "/register", "name=x", "application/x-www-form-urlencoded"), 400);
  expect_error(c.post_form("/register", {{"name", "x", ""}}), 400);  // no model file

  // Body over the limit; the connection is closed but the server is fine.
  expect_error(c.request("POST", "/classify/cnn", std::string(300 * 1024, 'x')), 413);

  // Routes and methods.
  expect_error(c.get("/nothing"), 404);
  expect_error(c.get("/classify"), 404);
  expect_error(c.get("/register"), 405);
  expect_error(c.get("/classify/cnn"), 405);
  auto put = c.request("PUT", "/models/cnn");
  expect_error(put, 405);
  CHECK_THAT(put.headers["allow"], Catch::Contains("GET") && Catch::Contains("DELETE"));
  CHECK(send_raw(ts.port(), "GARBAGE\r\n\r\n").rfind("HTTP/1.1 400", 0) == 0);

  // Still serving.
  auto ok = c.request("POST", "/classify/cnn", jpg);
  CHECK(ok.status == 200);
  CHECK(c.get("/health").status == 200);
  auto metrics = c.get("/metrics").body;
  CHECK(metric_sum(metrics, "servelab_http_requests_total{route=\"/register\",code=\"400\"}") >= 20);
  CHECK(metric_sum(metrics, "servelab_http_requests_total{route=\"unmatched\",code=\"404\"}") == 2);
}

TEST_CASE("a full queue answers 503 and a request past its timeout 504", "[server][errors]") {
  TempDir store;
  // Batches of 1000 never fill: requests wait in their queue until the timeout.
  TestServer ts(store.path.string(), [](servelab::runtime::EngineOptions& eo, auto&) {
    eo.control.batching = {"fixed", {}};
    eo.control.batching.params.set("size", "1000");
    eo.control.queue_bound = 2;
    eo.control.request_timeout = 0.5;
  });
  REQUIRE(HttpClient(ts.port()).post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);
  std::string jpg = read_file(image_file("gradient.jpg"));
  std::vector<ClientResponse> res(3);
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([&, i] { res[i] = HttpClient(ts.port()).request("POST", "/classify/cnn", jpg); });
  }
  for (auto& t : clients) t.join();
  int n503 = 0, n504 = 0;
  for (const auto& r : res) {
    json j = json::parse(r.body);
    CHECK(j.contains("error"));
    n503 += r.status == 503;
    n504 += r.status == 504;
  }
  CHECK(n503 == 1);
  CHECK(n504 == 2);
  HttpClient c(ts.port());
  CHECK(c.get("/health").status == 200);
  auto metrics = c.get("/metrics").body;
  CHECK(metric_sum(metrics, "servelab_request_failures_total{model=\"cnn\",reason=\"timeout\"}") == 2);
  CHECK(metric_sum(metrics, "servelab_request_failures_total{model=\"cnn\",reason=\"rejected\"}") == 1);
}
