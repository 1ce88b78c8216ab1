// The server under load: batches form under concurrency, a rotating access pattern over more
// models than fit evicts without failures, and `hey` with 32 clients sees no errors.
#include <catch2/catch.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "tests/integration/server/server_fixture.h"

using namespace servelab::testing;
using nlohmann::json;

TEST_CASE("concurrent requests form batches larger than one", "[server][load]") {
  TempDir store;
  TestServer ts(store.path.string(), [](servelab::runtime::EngineOptions& eo, auto&) {
    eo.control.workers = 1;
    eo.control.batching = {"max-delay", {}};
    eo.control.batching.params.set("max_delay", "0.01");
  });
  REQUIRE(HttpClient(ts.port()).post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);
  std::string jpg = read_file(image_file("gradient.jpg"));
  const int kClients = 16, kEach = 10;
  std::vector<int> ok(kClients, 0), max_batch(kClients, 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      HttpClient c(ts.port());
      for (int k = 0; k < kEach; ++k) {
        auto r = c.request("POST", "/classify/cnn", jpg, "image/jpeg");
        if (r.status != 200) continue;
        ok[i]++;
        max_batch[i] = std::max(max_batch[i], json::parse(r.body)["batch_size"].get<int>());
      }
    });
  }
  for (auto& t : clients) t.join();
  int total = 0, biggest = 0;
  for (int i = 0; i < kClients; ++i) {
    total += ok[i];
    biggest = std::max(biggest, max_batch[i]);
  }
  CHECK(total == kClients * kEach);
  CHECK(biggest > 1);
  auto metrics = HttpClient(ts.port()).get("/metrics").body;
  double batches = metric_sum(metrics, "servelab_batch_size_count{model=\"cnn\"");
  double size_sum = metric_sum(metrics, "servelab_batch_size_sum{model=\"cnn\"");
  INFO(metrics);
  CHECK(size_sum == kClients * kEach);
  CHECK(batches < kClients * kEach);  // some batch held more than one request
  CHECK(metric_sum(metrics, "servelab_batch_size_bucket{model=\"cnn\",le=\"1\"}") < batches);
}

TEST_CASE("three models with room for two: rotation evicts, nothing fails", "[server][load]") {
  TempDir store;
  TestServer ts(store.path.string(), [](servelab::runtime::EngineOptions& eo, auto&) {
    eo.control.workers = 2;
    eo.control.budgets[static_cast<int>(servelab::Tier::Host)].models = 2;
  });
  HttpClient c(ts.port());
  const std::vector<std::pair<std::string, std::string>> models = {
      {"a", "tiny_cnn"}, {"b", "noop"}, {"c", "tiny_cnn"}};
  for (const auto& [name, file] : models) {
    auto r = c.post_json("/register", register_json(name, file));
    INFO(r.body);
    REQUIRE(r.status == 201);
  }
  std::string jpg = read_file(image_file("gradient.jpg"));
  // Sequential rotation a, b, c, a, ...: with two slots every request after the first round
  // misses (LRU evicts exactly the model needed next).
  for (int i = 0; i < 30; ++i) {
    auto r = c.request("POST", "/classify/" + models[i % 3].first, jpg);
    INFO(r.body);
    REQUIRE(r.status == 200);
  }
  // And concurrently: four clients rotating from different offsets.
  std::vector<int> failures(4, 0);
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      HttpClient tc(ts.port());
      for (int i = 0; i < 15; ++i) {
        failures[t] += tc.request("POST", "/classify/" + models[(i + t) % 3].first, jpg).status != 200;
      }
    });
  }
  for (auto& th : clients) th.join();
  for (int f : failures) CHECK(f == 0);
  auto metrics = c.get("/metrics").body;
  INFO(metrics);
  CHECK(metric_sum(metrics, "servelab_model_evictions_total") >= 10);
  CHECK(metric_sum(metrics, "servelab_model_loads_total") >= 10);
  CHECK(metric_sum(metrics, "servelab_resident_models{tier=\"host\"}") <= 2);
  CHECK(metric_sum(metrics, "servelab_request_failures_total") == 0);
  CHECK(metric_sum(metrics, "servelab_requests_completed_total") == 90);
}

TEST_CASE("hey with 32 concurrent clients completes with zero errors", "[server][load][hey]") {
  if (std::system("command -v hey >/dev/null 2>&1") != 0) FAIL("`hey` is not installed (apt-get install hey)");
  TempDir store;
  TestServer ts(store.path.string(), [](servelab::runtime::EngineOptions& eo,
                                        servelab::server::ServerOptions& so) {
    eo.control.workers = 2;
    eo.control.batching = {"max-delay", {}};
    eo.control.batching.params.set("max_delay", "0.002");
    so.io_threads = 2;
  });
  REQUIRE(HttpClient(ts.port()).post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);
  const int n = 2048;  // hey sends n rounded down to a multiple of -c
  std::string cmd = "hey -n " + std::to_string(n) + " -c 32 -m POST -T image/jpeg -D " +
                    image_file("gradient.jpg") + " http://127.0.0.1:" + std::to_string(ts.port()) +
                    "/classify/cnn 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, got);
  int rc = pclose(p);
  INFO(out);
  REQUIRE(rc == 0);
  // "Status code distribution:\n  [200]\t2000 responses"
  std::regex line(R"(\[(\d+)\]\s+(\d+) responses)");
  std::map<int, int> codes;
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it) {
    codes[std::stoi((*it)[1])] += std::stoi((*it)[2]);
  }
  CHECK(codes.size() == 1);
  CHECK(codes[200] == n);
  CHECK(out.find("Error distribution") == std::string::npos);
}
