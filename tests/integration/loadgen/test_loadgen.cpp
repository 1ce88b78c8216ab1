// The load generator against an in-test server with a fixed service delay (127.0.0.1 only).
// Ground truths: Little's law for the closed loop (throughput = N / delay), the schedule for
// the open loop (send times kept however slow the server is), the HTTP status mapping.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <utility>  // before Asio: Boost 1.74 awaitable.hpp uses std::exchange unincluded
#include <boost/asio.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/subcommands.h"
#include "tests/integration/loadgen/fixed_delay_server.h"
#include "workloads/loadgen/loadgen.h"

using namespace servelab;
using loadgen::test::FixedDelayServer;

namespace {

workloads::Workload closed_loop(uint32_t concurrency, uint64_t requests, uint32_t models = 1) {
  workloads::WorkloadSpec spec;
  spec.num_models = models;
  spec.requests = requests;
  spec.arrival.type = "closed";
  spec.arrival.concurrency = concurrency;
  spec.access.type = "sequential";
  return workloads::generate(spec);
}

workloads::Workload constant_rate(double rate, uint64_t requests) {
  workloads::WorkloadSpec spec;
  spec.requests = requests;
  spec.arrival.type = "constant";
  spec.arrival.rate = rate;
  return workloads::generate(spec);
}

loadgen::LoadOptions options_for(const FixedDelayServer& server,
                                 std::vector<std::string> models = {"resnet"}) {
  loadgen::LoadOptions o;
  o.url = server.url();
  o.model_names = std::move(models);
  o.body = std::string(1000, 'x');
  o.timeout = 5;
  return o;
}

size_t count_status(const results::RunRecords& r, RequestStatus s) {
  return std::count_if(r.requests.begin(), r.requests.end(),
                       [s](const results::RequestRecord& q) { return q.status == s; });
}

}  // namespace

TEST_CASE("closed loop: N in flight gives throughput N / delay (Little's law)",
          "[loadgen][integration]") {
  const double delay = 0.05;
  FixedDelayServer server(delay);
  for (uint32_t n : {1u, 4u}) {
    CAPTURE(n);
    const uint64_t requests = 20 * n;
    loadgen::LoadStats stats;
    const auto records = loadgen::run_load(options_for(server), closed_loop(n, requests), &stats);
    REQUIRE(records.requests.size() == requests);
    CHECK(count_status(records, RequestStatus::Ok) == requests);
    const auto summary = results::summarize(records);
    const double throughput = summary["throughput_rps"].get<double>();
    // Little's law: N requests always in flight, each held `delay` -> N / delay per second.
    // Client and loopback overheads only lower it; allow 20% below, 5% above.
    CHECK(throughput < n / delay * 1.05);
    CHECK(throughput > n / delay * 0.8);
    CHECK(summary["latency_ms"]["p50"].get<double>() == Approx(delay * 1e3).epsilon(0.2));
    CHECK(stats.connections == n);  // keep-alive: one connection per client
  }
  CHECK(server.max_in_flight() == 4);
  const auto bodies = server.body_sizes();
  CHECK(std::all_of(bodies.begin(), bodies.end(), [](size_t b) { return b == 1000; }));
}

TEST_CASE("open loop keeps its send times when the server is slow", "[loadgen][integration]") {
  // Bounds come from the mechanism, not from this machine's speed: the server holds every
  // request at least `delay`; a generator that waited for each answer before the next send
  // would lag at least 99 x delay (29.7 s) by its last request and spread the server's
  // arrivals over as long; one that sends on schedule lags by its own send cost only.
  const double delay = 0.3, rate = 100;
  FixedDelayServer server(delay);
  auto workload = constant_rate(rate, 100);
  workload.warmup = 0.205;  // between two sends, 10 ms apart
  loadgen::LoadStats stats;
  const auto records = loadgen::run_load(options_for(server), workload, &stats);
  REQUIRE(records.requests.size() == 100);
  CHECK(count_status(records, RequestStatus::Ok) == 100);
  const double waiting_lag = 99 * delay;
  double worst = 0;
  for (size_t i = 0; i < 100; ++i) {
    worst = std::max(worst, records.requests[i].arrival - workload.send_times[i]);
    CHECK(records.requests[i].arrival >= workload.send_times[i] - 1e-6);  // never early
    CHECK(records.requests[i].finish - records.requests[i].arrival >= delay * 0.99);
  }
  CHECK(worst < waiting_lag / 2);
  CHECK(stats.send_lag_max == Approx(worst));
  // The warm-up reaches the records: the requests scheduled before it are left out.
  const auto before = std::count_if(workload.send_times.begin(), workload.send_times.end(),
                                    [](double t) { return t < 0.205; });
  REQUIRE(before > 0);
  const auto summary = results::summarize(records);
  CHECK(summary["warmup_requests"] == before);
  CHECK(summary["requests"] == 100 - before);
  // The server saw the schedule too: no earlier than it, far sooner than a waiting generator.
  const auto received = server.receive_times();
  REQUIRE(received.size() == 100);
  CHECK(received.back() - received.front() >= 99 / rate - 0.01);
  CHECK(received.back() - received.front() < waiting_lag / 2);
  CHECK(server.max_in_flight() > 1);  // a waiting generator never has two
  CHECK(stats.connections > 1);
  CHECK(stats.connections < 100);  // idle keep-alive connections are reused
}

TEST_CASE("open loop with a connection limit sends late and reports the lag",
          "[loadgen][integration]") {
  FixedDelayServer server(0.1);
  auto options = options_for(server);
  options.max_connections = 2;
  loadgen::LoadStats stats;
  const auto records = loadgen::run_load(options, constant_rate(100, 40), &stats);
  CHECK(count_status(records, RequestStatus::Ok) == 40);
  CHECK(stats.connections == 2);
  // 2 connections at 0.1 s serve 20 rps: the last of 40 requests goes out ~1.9 s after t=0.
  CHECK(stats.send_lag_max > 1.0);
}

TEST_CASE("HTTP status codes map to request statuses", "[loadgen][integration]") {
  FixedDelayServer server(0.01);
  const auto records = loadgen::run_load(
      options_for(server, {"ok", "busy", "late", "broken", "dropped"}), closed_loop(2, 10, 5));
  REQUIRE(records.requests.size() == 10);
  const RequestStatus expected[] = {RequestStatus::Ok, RequestStatus::Rejected,
                                    RequestStatus::Timeout, RequestStatus::Failed,
                                    RequestStatus::Dropped};
  for (size_t i = 0; i < 10; ++i) {
    CAPTURE(i);
    CHECK(records.requests[i].model == i % 5);
    CHECK(records.requests[i].status == expected[i % 5]);
  }
  const auto targets = server.targets();
  CHECK(std::count(targets.begin(), targets.end(), "/classify/busy") == 2);
}

TEST_CASE("client timeouts, refused connections and server-closed sockets",
          "[loadgen][integration]") {
  SECTION("a response slower than the timeout is a Timeout") {
    FixedDelayServer server(1.0);
    auto options = options_for(server);
    options.timeout = 0.1;
    const auto records = loadgen::run_load(options, closed_loop(2, 2));
    CHECK(count_status(records, RequestStatus::Timeout) == 2);
    CHECK(records.requests[0].finish - records.requests[0].arrival == Approx(0.1).margin(0.05));
  }
  SECTION("a port nobody listens on fails every request with the reason") {
    unsigned short port;
    {
      boost::asio::io_context io;
      boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
      port = a.local_endpoint().port();
    }
    loadgen::LoadOptions options;
    options.url = "http://127.0.0.1:" + std::to_string(port);
    options.model_names = {"m"};
    loadgen::LoadStats stats;
    const auto records = loadgen::run_load(options, closed_loop(1, 3), &stats);
    CHECK(count_status(records, RequestStatus::Failed) == 3);
    CHECK_THAT(stats.first_error, Catch::Contains("refused"));
  }
  SECTION("a server that closes after each response is handled by reconnecting") {
    FixedDelayServer server(0.005, 1);
    loadgen::LoadStats stats;
    const auto records = loadgen::run_load(options_for(server), closed_loop(1, 5), &stats);
    CHECK(count_status(records, RequestStatus::Ok) == 5);
    CHECK(stats.connections == 5);
  }
}

TEST_CASE("bad inputs are rejected before sending", "[loadgen]") {
  loadgen::LoadOptions o;
  o.model_names = {"a"};
  o.url = "https://example.com";
  CHECK_THROWS_WITH(loadgen::run_load(o, closed_loop(1, 1)), Catch::Contains("https"));
  o.url = "http://127.0.0.1:99999";
  CHECK_THROWS_WITH(loadgen::run_load(o, closed_loop(1, 1)), Catch::Contains("port"));
  o.url = "http://127.0.0.1:8080";
  CHECK_THROWS_WITH(loadgen::run_load(o, closed_loop(1, 4, 2)),
                    Catch::Contains("model index 1") && Catch::Contains("1 model names"));
  const auto u = loadgen::parse_url("http://[::1]:8080/api/");
  CHECK(u.host == "::1");
  CHECK(u.port == "8080");
  CHECK(u.prefix == "/api");
}

TEST_CASE("servelab load writes records and summary in the shared format",
          "[loadgen][integration][cli]") {
  FixedDelayServer server(0.01);
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(SERVELAB_BINARY_DIR) / "test_loadgen_cli";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "image.jpg") << "not really a jpeg";
  std::ofstream(dir / "workload.yaml")
      << "models: [alexnet, {name: resnet18}]\n"
         "workload:\n  requests: 12\n  arrival: {type: poisson, rate: 200}\n"
         "  access: {type: sequential}\n";
  const std::string url = server.url(), yaml = (dir / "workload.yaml").string(),
                    out = (dir / "out").string(), image = (dir / "image.jpg").string();
  std::vector<std::string> args = {"load",  "--url", url,       yaml,      "--out",
                                   out,     "--image", image,   "--slo-ms", "100"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  REQUIRE(cli::load_main(static_cast<int>(argv.size()), argv.data()) == 0);

  const auto back = results::read_requests_csv(out + "/requests.csv");
  REQUIRE(back.requests.size() == 12);
  CHECK(back.model_names == std::vector<std::string>{"alexnet", "resnet18"});
  nlohmann::json summary;
  std::ifstream(out + "/summary.json") >> summary;
  CHECK(summary["completed"] == 12);
  CHECK(summary["slo_attainment"].get<double>() > 0.5);
  CHECK(summary["per_model"].contains("resnet18"));
  CHECK(summary["loadgen"]["connections"].get<int>() >= 1);
  CHECK(fs::exists(out + "/workload.yaml"));
  const auto targets = server.targets();
  CHECK(std::count(targets.begin(), targets.end(), "/classify/resnet18") == 6);

  // The simulator's {count, prefix} form names models prefix-0 .. prefix-(count-1).
  std::ofstream(dir / "counted.yaml")
      << "models: {count: 3, prefix: caffenet, profile_model: caffenet}\n"
         "workload: {requests: 3, arrival: {type: closed}, access: {type: sequential}}\n";
  args[3] = (dir / "counted.yaml").string();
  argv.clear();
  for (auto& a : args) argv.push_back(a.data());
  REQUIRE(cli::load_main(static_cast<int>(argv.size()), argv.data()) == 0);
  const auto all = server.targets();
  CHECK(std::count(all.begin(), all.end(), "/classify/caffenet-2") == 1);

  args[3] = (dir / "missing.yaml").string();
  argv.clear();
  for (auto& a : args) argv.push_back(a.data());
  CHECK(cli::load_main(static_cast<int>(argv.size()), argv.data()) == 2);
}

TEST_CASE("servelab load against a closed port writes its records and exits 1",
          "[loadgen][integration][cli]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(SERVELAB_BINARY_DIR) / "test_loadgen_closed_port";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "image.jpg") << "x";
  std::ofstream(dir / "workload.yaml")
      << "models: [m]\nworkload: {requests: 5, arrival: {type: closed}, access: {type: "
         "sequential}}\n";
  uint16_t port;  // a loopback port that was free a moment ago: nothing listens on it
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }
  const std::string out = (dir / "out").string();
  auto run = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"load", "--url", "http://127.0.0.1:" + std::to_string(port),
                                     (dir / "workload.yaml").string(), "--out", out,
                                     "--image", (dir / "image.jpg").string(), "--timeout", "5"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& s : args) argv.push_back(s.data());
    return cli::load_main(static_cast<int>(argv.size()), argv.data());
  };
  CHECK(run({}) == 1);  // none completed, whatever the threshold
  CHECK(run({"--max-failed-fraction", "1"}) == 1);
  nlohmann::json summary;
  std::ifstream(out + "/summary.json") >> summary;
  CHECK(summary["requests"] == 5);
  CHECK(summary["completed"] == 0);
  CHECK(run({"--max-failed-fraction", "1.5"}) == 2);  // a bad option, not a failed load
}

TEST_CASE("servelab load exits 1 when more requests failed than --max-failed-fraction",
          "[loadgen][integration][cli]") {
  FixedDelayServer server(0.001);  // model "broken" answers 500: half the requests below
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(SERVELAB_BINARY_DIR) / "test_loadgen_threshold";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "image.jpg") << "x";
  std::ofstream(dir / "workload.yaml")
      << "models: [ok, broken]\nworkload: {requests: 4, arrival: {type: closed}, access: "
         "{type: sequential}}\n";
  auto run = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"load", "--url", server.url(),
                                     (dir / "workload.yaml").string(), "--out",
                                     (dir / "out").string(), "--image",
                                     (dir / "image.jpg").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& s : args) argv.push_back(s.data());
    return cli::load_main(static_cast<int>(argv.size()), argv.data());
  };
  CHECK(run({}) == 0);  // by default only a load where nothing completed fails
  CHECK(run({"--max-failed-fraction", "0.5"}) == 0);
  CHECK(run({"--max-failed-fraction", "0.25"}) == 1);
}

TEST_CASE("closed loop opens every connection before its clock starts",
          "[loadgen][integration]") {
  FixedDelayServer server(0.02);
  for (bool preconnect : {true, false}) {
    CAPTURE(preconnect);
    auto options = options_for(server);
    options.preconnect = preconnect;
    uint64_t base = server.connections(), seen = 0, requests_then = 0;
    int calls = 0;
    options.before_start = [&] {
      ++calls;
      // The server's accepts may lag the client's completed connects a little.
      for (int i = 0; i < 200 && server.connections() - base < 8; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      seen = server.connections() - base;
      requests_then = server.requests();
    };
    const uint64_t before = server.requests();
    loadgen::LoadStats stats;
    const auto records = loadgen::run_load(options, closed_loop(8, 16), &stats);
    CHECK(calls == 1);
    CHECK(requests_then == before);  // nothing sent before the clock starts
    CHECK(seen == (preconnect ? 8u : 0u));
    CHECK(stats.connections == 8);
    CHECK(count_status(records, RequestStatus::Ok) == 16);
  }
}

TEST_CASE("a ServeLab answer's time split fills the server-side fields",
          "[loadgen][integration]") {
  results::RequestRecord r;
  r.arrival = 1.0;
  r.finish = 2.0;
  r.dispatch = r.start = std::nan("");
  REQUIRE(loadgen::apply_server_timing(
      R"({"model":"m","top":[],"batch_size":6,"queue_ms":3.5,"load_ms":40,"compute_ms":250})", r));
  CHECK(r.batch_size == 6);
  CHECK(r.start == Approx(1.75));
  CHECK(r.dispatch == Approx(1.71));
  CHECK(r.queued == Approx(1.71 - 0.0035));
  CHECK(r.waited_for_load);
  CHECK(r.finish == 2.0);
  CHECK(r.arrival == 1.0);

  for (const char* body : {"not json", "{\"error\":\"unknown model\"}", "[1,2]",
                           R"({"batch_size":0,"load_ms":0,"compute_ms":1})",
                           R"({"batch_size":2,"load_ms":0,"compute_ms":-1})",
                           R"({"batch_size":"2","load_ms":0,"compute_ms":1})"}) {
    CAPTURE(body);
    results::RequestRecord q;
    q.finish = 2.0;
    q.start = std::nan("");
    CHECK_FALSE(loadgen::apply_server_timing(body, q));
    CHECK(q.batch_size == 0);
    CHECK(std::isnan(q.start));
  }
}
