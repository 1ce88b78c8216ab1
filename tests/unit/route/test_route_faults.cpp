// The front end against faulty backends over real loopback sockets: a backend where nothing
// listens, one that accepts and never answers, and the front end's own bound on what it
// holds. Each request must be answered (never hang) with a status and message that say why.
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/route/http/route_server.h"
#include "tests/integration/server/http_client.h"
#include "tests/unit/route/holding_backend.h"

using namespace servelab;
using namespace servelab::testing;
using nlohmann::json;

namespace {

route::RouteServerOptions options_for(std::vector<uint16_t> ports, double timeout_s) {
  route::RouteServerOptions o;
  std::string list;
  for (uint16_t p : ports) list += (list.empty() ? "" : ",") + ("127.0.0.1:" + std::to_string(p));
  o.forwarder.backends = route::parse_backends(list);
  o.forwarder.backend_timeout_s = timeout_s;
  o.forwarder.probe_interval_s = 0.2;
  return o;
}

// The value of /metrics sample `name` (a whole line's name with labels), or -1.
double metric(uint16_t port, const std::string& name) {
  const std::string text = HttpClient(port).get("/metrics").body;
  const size_t at = text.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + name.size() + 2));
}

}  // namespace

TEST_CASE("a backend where nothing listens is down from the start and requests get 503",
          "[route][faults]") {
  const uint16_t dead = closed_port();
  route::RouteServer front(options_for({dead}, 5));
  const auto down = front.start();
  REQUIRE(down.size() == 1);
  CHECK(down[0].first == "127.0.0.1:" + std::to_string(dead));
  CHECK(down[0].second.find("connect") != std::string::npos);
  HttpClient c(front.port());
  const auto r = c.request("POST", "/classify/m", "x", "image/jpeg");
  CHECK(r.status == 503);
  CHECK(r.body.find("no backend is up") != std::string::npos);
  const json b = json::parse(c.get("/backends").body);
  CHECK(b["backends"][0]["up"] == false);
  CHECK(json::parse(c.get("/health").body)["backends_up"] == 0);
}

TEST_CASE("a backend that accepts and never answers is marked down and the request gets 504",
          "[route][faults]") {
  HoldingBackend hang;
  route::RouteServer front(options_for({hang.port()}, 0.3));
  REQUIRE(front.start().empty());  // its /health answers: up
  HttpClient c(front.port());
  const auto r = c.request("POST", "/classify/m", "x", "image/jpeg");
  CHECK(r.status == 504);
  CHECK(r.body.find("no answer before the deadline") != std::string::npos);
  CHECK(hang.held() == 1);
  const std::string backend = "{backend=\"127.0.0.1:" + std::to_string(hang.port()) + "\"";
  CHECK(metric(front.port(), "servelab_route_marked_down_total" + backend + "}") == 1);
  CHECK(metric(front.port(), "servelab_route_backend_failures_total" + backend +
                                 ",kind=\"timeout\"}") == 1);
}

TEST_CASE("a backend that answered and then hangs times out each request after the deadline",
          "[route][faults]") {
  // The first request is answered on a keep-alive connection, whose deadline timer is left
  // armed for that request's deadline; the second, sent later on the same connection, hangs.
  // That timer fires while the second is in flight, before its own deadline: the 504 must
  // wait for the second's deadline, a lower bound that holds on any machine.
  constexpr double kTimeout = 0.4;
  HoldingBackend half(/*silent=*/false, /*answer_first=*/1);
  route::RouteServer front(options_for({half.port()}, kTimeout));
  REQUIRE(front.start().empty());
  HttpClient c(front.port());
  CHECK(c.request("POST", "/classify/m", "x", "image/jpeg").status == 200);
  std::this_thread::sleep_for(std::chrono::duration<double>(kTimeout / 2));
  const auto sent = std::chrono::steady_clock::now();
  const auto r = c.request("POST", "/classify/m", "x", "image/jpeg");
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  CHECK(r.status == 504);
  CHECK(r.body.find("no answer before the deadline") != std::string::npos);
  CHECK(waited >= kTimeout);
  CHECK(half.held() == 1);
}

TEST_CASE("a silent backend stays down and requests are answered without waiting for it",
          "[route][faults]") {
  HoldingBackend silent(/*silent=*/true);
  route::RouteServer front(options_for({silent.port()}, 30));
  const auto down = front.start();  // the first probe times out after probe_interval_s
  REQUIRE(down.size() == 1);
  CHECK(down[0].second.find("timeout") != std::string::npos);
  const auto r = HttpClient(front.port()).request("POST", "/v2/models/m/infer", "{}",
                                                  "application/json");
  CHECK(r.status == 503);
  CHECK(silent.held() == 1);  // only the probe reached it
}

TEST_CASE("the front end answers 503 before forwarding once it holds max_held requests",
          "[route][faults][queue]") {
  HoldingBackend hang;
  route::RouteServerOptions o = options_for({hang.port()}, 2);
  o.forwarder.max_held = 2;
  route::RouteServer front(o);
  REQUIRE(front.start().empty());
  auto held = [&] {
    return std::async(std::launch::async, [port = front.port()] {
      return HttpClient(port).request("POST", "/classify/m", "x", "image/jpeg").status;
    });
  };
  auto a = held(), b = held();
  while (hang.held() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(metric(front.port(), "servelab_route_held") == 2);
  const auto r = HttpClient(front.port()).request("POST", "/classify/m", "x", "image/jpeg");
  CHECK(r.status == 503);
  CHECK(r.body.find("queue is full") != std::string::npos);
  CHECK(hang.held() == 2);  // the third was never forwarded
  CHECK(a.get() == 504);
  CHECK(b.get() == 504);
  CHECK(metric(front.port(), "servelab_route_rejected_full_total") == 1);
}

TEST_CASE("stopping the front end answers each held request 503 before it closes",
          "[route][faults][stop]") {
  HoldingBackend hang;
  route::RouteServer front(options_for({hang.port()}, 60));  // no timeout within the test
  REQUIRE(front.start().empty());
  auto answer = std::async(std::launch::async, [port = front.port()] {
    return HttpClient(port).request("POST", "/classify/m", "x", "image/jpeg");
  });
  while (hang.held() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  front.stop();
  const auto r = answer.get();
  CHECK(r.status == 503);
  CHECK(r.body.find("the front end is stopping") != std::string::npos);
  front.stop();  // idempotent
}

TEST_CASE("paths the front end does not forward are 404 and it counts its answers",
          "[route]") {
  HoldingBackend hang;
  route::RouteServer front(options_for({hang.port()}, 1));
  REQUIRE(front.start().empty());
  HttpClient c(front.port());
  CHECK(c.get("/models").status == 404);
  CHECK(c.request("POST", "/register", "{}", "application/json").status == 404);
  CHECK(c.get("/classify/m").status == 405);
  CHECK(hang.held() == 0);
}

TEST_CASE("with a placement requests go only to their model's hosts and others are 404",
          "[route][placement]") {
  HoldingBackend b0, b1;
  route::RouteServerOptions o = options_for({b0.port(), b1.port()}, 0.3);
  o.forwarder.hosts = {{"a", {1}}, {"b", {0, 1}}};
  o.forwarder.probe_interval_s = 60;  // a backend marked down stays down for the test
  route::RouteServer front(o);
  REQUIRE(front.start().empty());
  HttpClient c(front.port());
  CHECK(c.request("POST", "/classify/a", "x", "image/jpeg").status == 504);  // b1 holds it
  CHECK(b0.held() == 0);
  CHECK(b1.held() == 1);
  // b1 is down now (no answer in time): a's only host is down, b still has b0.
  const auto down = c.request("POST", "/classify/a", "x", "image/jpeg");
  CHECK(down.status == 503);
  CHECK(down.body.find("no backend hosting model 'a' is up") != std::string::npos);
  CHECK(c.request("POST", "/v2/models/b/infer", "{}", "application/json").status == 504);
  CHECK(b0.held() == 1);
  const auto unknown = c.request("POST", "/classify/c", "x", "image/jpeg");
  CHECK(unknown.status == 404);
  CHECK(unknown.body.find("model 'c' is not placed on any backend") != std::string::npos);
  CHECK(b0.held() + b1.held() == 2);
}

TEST_CASE("a placement naming a backend that does not exist is refused", "[route][placement]") {
  route::RouteServerOptions o = options_for({closed_port()}, 1);
  o.forwarder.hosts = {{"a", {1}}};
  CHECK_THROWS_WITH(route::RouteServer(o),
                    Catch::Contains("model 'a' must be hosted on backends 0..0"));
}
