// The cluster's front end over real loopback in front of real `servelab serve` processes (the
// tiny models of `bash scripts/make-models --tiny`): forwarding in the router's order, the
// request's headers passed on, answers equal to the backend's own, a backend killed with
// kill -9 marked down and up again, and the `servelab route` binary itself.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/route/http/route_server.h"
#include "tests/integration/server/serve_process.h"
#include "tests/integration/server/server_fixture.h"
#include "tests/unit/route/holding_backend.h"

using namespace servelab;
using namespace servelab::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr auto kStart = std::chrono::seconds(120);  // a loaded machine starts LibTorch slowly

// `servelab serve` on a free port with its own store, tiny_cnn registered as "cnn".
struct Backend {
  Backend(const fs::path& dir, const std::string& name, uint16_t port = 0)
      : store(dir / (name + "-store")),
        process({"--port", std::to_string(port), "--store", store.string(), "--model-root",
                 models_dir(), "--workers", "1"},
                dir / (name + "-" + std::to_string(port))) {
    this->port = process.wait_port(kStart);
    INFO("serve stderr: " << process.err());
    REQUIRE(this->port != 0);
  }
  void register_cnn() {
    REQUIRE(HttpClient(port).post_json("/register", register_json("cnn", "tiny_cnn")).status ==
            201);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
  fs::path store;
  ServeProcess process;
  uint16_t port = 0;
};

route::RouteServerOptions front_options(const std::vector<const Backend*>& backends,
                                        const std::string& router) {
  route::RouteServerOptions o;
  std::string list;
  for (const Backend* b : backends) list += (list.empty() ? "" : ",") + b->address();
  o.forwarder.backends = route::parse_backends(list);
  o.forwarder.router = {router, {}};
  o.forwarder.probe_interval_s = 0.2;
  return o;
}

std::string classify_count(uint16_t port) {
  return std::to_string(metric_sum(HttpClient(port).get("/metrics").body,
                                   "servelab_http_requests_total{route=\"/classify/{name}\""));
}

bool backend_up(uint16_t front, size_t k) {
  return json::parse(HttpClient(front).get("/backends").body)["backends"][k]["up"].get<bool>();
}

std::string infer_binary(const std::vector<float>& values, size_t* header_len) {
  json in = {{"name", "INPUT__0"}, {"datatype", "FP32"}, {"shape", {1, 3, 32, 32}},
             {"parameters", {{"binary_data_size", values.size() * sizeof(float)}}}};
  std::string body = json({{"inputs", {in}}}).dump();
  *header_len = body.size();
  body.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return body;
}

}  // namespace

TEST_CASE("the front end forwards classify and v2 infer to real servers in round-robin order",
          "[route][cluster]") {
  TempDir dir;
  Backend b0(dir.path, "b0"), b1(dir.path, "b1");
  b0.register_cnn();
  b1.register_cnn();
  route::RouteServer front(front_options({&b0, &b1}, "round-robin"));
  REQUIRE(front.start().empty());
  const std::string jpg = read_file(image_file("gradient.jpg"));
  const json direct = json::parse(HttpClient(b0.port).request("POST", "/classify/cnn", jpg).body);

  HttpClient c(front.port());
  for (int i = 0; i < 6; ++i) {
    auto r = c.request("POST", "/classify/cnn", jpg, "image/jpeg");
    INFO(r.body);
    REQUIRE(r.status == 200);
    CHECK(r.headers["x-servelab-backend"] == (i % 2 ? b1.address() : b0.address()));
    CHECK(json::parse(r.body)["top"] == direct["top"]);
  }
  CHECK(classify_count(b0.port) == std::to_string(4.0));  // 3 routed + the direct one
  CHECK(classify_count(b1.port) == std::to_string(3.0));

  SECTION("a binary-tensor v2 infer reaches the backend whole") {
    std::vector<float> values(3 * 32 * 32);
    for (size_t i = 0; i < values.size(); ++i) values[i] = float(i % 17) / 17.0f;
    size_t header_len = 0;
    const std::string body = infer_binary(values, &header_len);
    HttpClient d(b1.port);
    d.set_header("Inference-Header-Content-Length", std::to_string(header_len));
    c.set_header("Inference-Header-Content-Length", std::to_string(header_len));
    const auto want = d.request("POST", "/v2/models/cnn/infer", body, "application/octet-stream");
    const auto got = c.request("POST", "/v2/models/cnn/infer", body, "application/octet-stream");
    INFO(got.body);
    REQUIRE(want.status == 200);
    REQUIRE(got.status == 200);
    CHECK(json::parse(got.body)["outputs"] == json::parse(want.body)["outputs"]);
  }
  SECTION("the request's X-SLO-Ms reaches the backend") {
    c.set_header("X-SLO-Ms", "not-a-number");  // the backend's own check answers
    const auto r = c.request("POST", "/classify/cnn", jpg, "image/jpeg");
    CHECK(r.status == 400);
    CHECK(r.body.find("X-SLO-Ms must be") != std::string::npos);
  }
}

TEST_CASE("a backend killed with kill -9 is marked down, its requests are served by the other, "
          "and it is marked up when it is back", "[route][cluster][faults]") {
  TempDir dir;
  Backend b0(dir.path, "b0");
  auto b1 = std::make_unique<Backend>(dir.path, "b1");
  b0.register_cnn();
  b1->register_cnn();
  const uint16_t port1 = b1->port;
  route::RouteServer front(front_options({&b0, b1.get()}, "round-robin"));
  REQUIRE(front.start().empty());
  const std::string jpg = read_file(image_file("gradient.jpg"));
  HttpClient c(front.port());

  b1->process.kill9();
  for (int i = 0; i < 6; ++i) {  // round robin sends every other one to the killed server
    auto r = c.request("POST", "/classify/cnn", jpg, "image/jpeg");
    INFO(r.body);
    REQUIRE(r.status == 200);
    CHECK(r.headers["x-servelab-backend"] == b0.address());
  }
  CHECK_FALSE(backend_up(front.port(), 1));
  const std::string metrics = HttpClient(front.port()).get("/metrics").body;
  CHECK(metric_sum(metrics, "servelab_route_retries_total") >= 1);

  // The same port and store again: the registry brings "cnn" back.
  b1.reset();
  b1 = std::make_unique<Backend>(dir.path, "b1", port1);
  const auto deadline = std::chrono::steady_clock::now() + kStart;
  while (!backend_up(front.port(), 1) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(backend_up(front.port(), 1));
  bool reached = false;
  for (int i = 0; i < 2; ++i)
    reached = reached || c.request("POST", "/classify/cnn", jpg, "image/jpeg")
                                 .headers["x-servelab-backend"] == b1->address();
  CHECK(reached);
}

TEST_CASE("requests in flight when a backend is killed are answered by the other backend",
          "[route][cluster][faults]") {
  TempDir dir;
  Backend b0(dir.path, "b0"), b1(dir.path, "b1");
  b0.register_cnn();
  b1.register_cnn();
  route::RouteServer front(front_options({&b0, &b1}, "round-robin"));
  REQUIRE(front.start().empty());
  const std::string jpg = read_file(image_file("gradient.jpg"));
  constexpr int kClients = 4, kEach = 15;
  std::atomic<int> answered{0};
  std::vector<std::future<std::vector<int>>> clients;
  for (int i = 0; i < kClients; ++i)
    clients.push_back(std::async(std::launch::async, [&] {
      HttpClient c(front.port());
      std::vector<int> statuses;
      for (int k = 0; k < kEach; ++k) {
        statuses.push_back(c.request("POST", "/classify/cnn", jpg, "image/jpeg").status);
        ++answered;
      }
      return statuses;
    }));
  while (answered < 8) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  b1.process.kill9();  // while the clients keep sending
  for (auto& f : clients)
    for (int status : f.get()) CHECK(status == 200);
  CHECK_FALSE(backend_up(front.port(), 1));
}

TEST_CASE("servelab route prints its port, forwards, stops on SIGTERM, and refuses bad options",
          "[route][cluster][cli]") {
  TempDir dir;
  Backend b0(dir.path, "b0");
  b0.register_cnn();
  // A second backend where nothing listens: named down at start, the first one serves.
  const std::string unreachable = "127.0.0.1:" + std::to_string(closed_port());
  ServeProcess route("route", {"--port", "0", "--backends", b0.address() + "," + unreachable,
                               "--router", "power-of-two"},
                     dir.path / "route");
  const uint16_t port = route.wait_port(std::chrono::seconds(30));
  INFO("route stderr: " << route.err());
  REQUIRE(port != 0);
  CHECK(route.err().find("backend " + unreachable + " is down (connect: ") != std::string::npos);
  const auto r = HttpClient(port).request("POST", "/classify/cnn",
                                          read_file(image_file("gradient.jpg")), "image/jpeg");
  CHECK(r.status == 200);
  CHECK(route.stop(std::chrono::seconds(30)));

  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--backends", "127.0.0.1:9,127.0.0.1:9"}, "listed twice"},
           {{"--backends", "127.0.0.1:9", "--router", "nearest"}, "unknown router 'nearest'"},
           {{"--backends", "127.0.0.1:9", "--router-param", "choices"}, "key=value"},
           {{"--port", "0"}, "--backends is required"},
           {{"--backends", "127.0.0.1:9", "--max-held", "-1"}, "must not be negative"},
           {{"--backends", "127.0.0.1:9", "--hosts", "cnn=1"}, "server '1' is not one of 0..0"},
           {{"--backends", "127.0.0.1:9", "--hosts", "cnn"}, "MODEL=I,J"},
           {{"--backends", "127.0.0.1:9", "--backup-percentile", "100"}, "in (0, 100)"},
           {{"--backends", "127.0.0.1:9", "--backup-after-ms", "-5"}, "must be between 0 and"}}) {
    ServeProcess bad("route", args, dir.path / "bad");
    CHECK(bad.wait_exit(std::chrono::seconds(30)) == 2);
    CHECK(bad.err().find(message) != std::string::npos);
  }
}
