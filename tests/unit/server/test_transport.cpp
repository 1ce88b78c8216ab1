// The asynchronous HTTP transport with real sockets on 127.0.0.1: keep-alive, replies from
// other threads, body limit, malformed requests, and that a waiting request holds no thread.
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "engine/server/http_transport.h"
#include "tests/integration/server/http_client.h"

using namespace servelab::server;
using servelab::testing::HttpClient;

namespace {

// Answers "/echo" at once with the body, and "/slow" 200 ms later from a detached thread.
Handler test_handler() {
  return [](HttpRequest req, Reply reply) {
    if (req.path == "/slow") {
      std::thread([reply] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        reply(json_response(200, R"({"slow":true})"));
      }).detach();
      return;
    }
    if (req.path == "/throw") throw std::runtime_error("handler bug");
    nlohmann::json j = {{"method", req.method}, {"path", req.path}, {"body", req.body}};
    reply(json_response(200, j.dump()));
  };
}

}  // namespace

TEST_CASE("transport serves keep-alive requests", "[server][transport]") {
  TransportOptions opt;
  opt.io_threads = 1;
  opt.max_body_bytes = 1024;
  HttpTransport t(opt, test_handler());
  t.start();
  REQUIRE(t.port() != 0);
  HttpClient c(t.port());
  for (int i = 0; i < 5; ++i) {
    auto r = c.request("POST", "/echo", "hello " + std::to_string(i), "text/plain");
    REQUIRE(r.status == 200);
    CHECK(nlohmann::json::parse(r.body)["body"] == "hello " + std::to_string(i));
  }
  CHECK(c.connections_opened() == 1);

  SECTION("a body over the limit is 413 and the server keeps serving") {
    auto r = c.request("POST", "/echo", std::string(4096, 'x'), "text/plain");
    CHECK(r.status == 413);
    CHECK(nlohmann::json::parse(r.body).contains("error"));
    CHECK(c.request("POST", "/echo", "ok", "text/plain").status == 200);
  }
  SECTION("a handler exception is a JSON 500") {
    auto r = c.get("/throw");
    CHECK(r.status == 500);
    CHECK(nlohmann::json::parse(r.body)["error"].get<std::string>().find("handler bug") !=
          std::string::npos);
    CHECK(c.get("/echo").status == 200);
  }
  SECTION("a malformed request is 400 and the server keeps serving") {
    std::string raw = servelab::testing::send_raw(t.port(), "NOT HTTP AT ALL\r\n\r\n");
    CHECK(raw.rfind("HTTP/1.1 400", 0) == 0);
    raw = servelab::testing::send_raw(
        t.port(), "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n");
    CHECK(raw.rfind("HTTP/1.1 400", 0) == 0);
    CHECK(c.get("/echo").status == 200);
  }
  SECTION("Expect: 100-continue gets an interim response") {
    std::string raw = servelab::testing::send_raw(
        t.port(),
        "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n"
        "Connection: close\r\n\r\nhi");
    CHECK(raw.rfind("HTTP/1.1 100 Continue", 0) == 0);
    CHECK(raw.find("HTTP/1.1 200 OK") != std::string::npos);
  }
  t.stop();
  CHECK_THROWS(HttpClient(t.port()).get("/echo"));
}

TEST_CASE("waiting requests hold no IO thread", "[server][transport]") {
  TransportOptions opt;
  opt.io_threads = 1;  // one thread serves all 16 waiting requests at once
  HttpTransport t(opt, test_handler());
  t.start();
  const int kClients = 16;
  std::vector<std::thread> clients;
  std::vector<int> status(kClients, 0);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] { status[i] = HttpClient(t.port()).get("/slow").status; });
  }
  for (auto& th : clients) th.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int s : status) CHECK(s == 200);
  // Serialized on the single IO thread this would take 16 x 0.2 s = 3.2 s.
  CHECK(secs < 1.5);
}

TEST_CASE("a second server cannot bind a port in use", "[server][transport]") {
  HttpTransport a(TransportOptions{}, test_handler());
  a.start();
  TransportOptions opt;
  opt.port = a.port();
  HttpTransport b(opt, test_handler());
  CHECK_THROWS_WITH(b.start(), Catch::Contains("cannot listen"));
}
