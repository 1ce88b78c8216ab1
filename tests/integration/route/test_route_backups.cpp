// Backup requests with cross-server cancellation over real loopback: two in-process servers
// whose `noop` batches sleep (the profiled executor, one worker each) behind an in-process
// `servelab route`. A request whose first server is busy gets a backup on the other after the
// delay; the backup starts first, so its server's 102 has the first copy cancelled there (its
// /metrics show the cancel) and the backup's answer is the request's. A request that answers
// before the delay sends no backup, and one that started before it neither. A backend that
// accepts and never answers has its request retried on the other host, or answered by the
// backup there.
#include <catch2/catch.hpp>

#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/route/http/route_server.h"
#include "tests/integration/server/server_fixture.h"
#include "tests/integration/server/slow_model.h"
#include "tests/unit/route/holding_backend.h"

using namespace servelab;
using namespace servelab::testing;

namespace {

struct Pair {
  Pair(const TempDir& dir, double seconds)
      : b0((dir.path / "b0").string(), slow_model_server({{"noop", seconds}})),
        b1((dir.path / "b1").string(), slow_model_server({{"noop", seconds}})) {
    for (uint16_t port : {b0.port(), b1.port()})
      REQUIRE(HttpClient(port).post_json("/register", register_json("noop", "noop")).status ==
              201);
  }
  route::RouteServerOptions front(double backup_after_s) const {
    route::RouteServerOptions o;
    o.forwarder.backends = route::parse_backends("127.0.0.1:" + std::to_string(b0.port()) +
                                                 ",127.0.0.1:" + std::to_string(b1.port()));
    o.forwarder.router = {"round-robin", {}};  // the first request goes to b0
    o.forwarder.probe_interval_s = 0.2;
    o.forwarder.backup_after_s = backup_after_s;
    return o;
  }
  TestServer b0, b1;
};

double metric(uint16_t port, const std::string& prefix) {
  return metric_sum(HttpClient(port).get("/metrics").body, prefix);
}

ClientResponse classify(uint16_t port, const std::string& image) {
  return HttpClient(port).request("POST", "/classify/noop", image, "image/png");
}

// A request to the server at `port` that holds its only worker, once its batch has started
// (hang guard: 30 s); its answer comes through the future.
std::future<ClientResponse> keep_busy(uint16_t port, const std::string& image) {
  auto busy = std::async(std::launch::async, [port, image] { return classify(port, image); });
  for (int i = 0; i < 600 && metric(port, "servelab_batches_total{model=\"noop\"") < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return busy;
}

// The copies' row of the request the front end numbered `seq`, once settled (hang guard:
// 30 s, then whatever there is).
route::CopyRow settled_row(route::RouteServer& front, uint64_t seq) {
  route::CopyRows all;
  for (int i = 0; i < 600 && !all.rows.count(seq); ++i) {
    std::promise<route::CopyRows> taken;
    front.forwarder().copy_rows([&taken](route::CopyRows r) { taken.set_value(std::move(r)); });
    all.rows.merge(taken.get_future().get().rows);
    if (!all.rows.count(seq)) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(all.rows.count(seq) == 1);
  return all.rows.at(seq);
}

}  // namespace

TEST_CASE("a request whose server is busy gets a backup on the other server, and the first copy "
          "is cancelled there", "[route][backups]") {
  TempDir dir;
  Pair servers(dir, 2.0);
  route::RouteServer front(servers.front(0.2));
  REQUIRE(front.start().empty());
  const std::string image = read_file(image_file("digit_7.png"));

  // b0's only worker is busy for 2 s: the routed request waits in b0's queue.
  auto busy = keep_busy(servers.b0.port(), image);
  const auto r = classify(front.port(), image);
  INFO(r.body);
  CHECK(r.status == 200);
  CHECK(r.headers.at("x-servelab-backend") == "127.0.0.1:" + std::to_string(servers.b1.port()));
  CHECK(r.headers.at("x-servelab-copy") == "backup");
  CHECK(busy.get().status == 200);

  CHECK(metric(front.port(), "servelab_route_backups_sent_total") == 1);
  CHECK(metric(front.port(), "servelab_route_won_total{copy=\"backup\"") == 1);
  // The cancel's answer may come after the request's: wait for it (hang guard).
  for (int i = 0; i < 600 && metric(front.port(), "servelab_route_copies_cancelled_total") < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(metric(front.port(), "servelab_route_copies_cancelled_total") == 1);
  CHECK(metric(front.port(), "servelab_route_copies_wasted_total") == 0);
  CHECK(metric(servers.b0.port(), "servelab_request_cancels_total{result=\"removed\"") == 1);
  CHECK(metric(servers.b0.port(), "servelab_batches_total{model=\"noop\"") == 1);  // busy's only
  CHECK(metric(servers.b1.port(), "servelab_request_cancels_total") == 0);

  // Its per-request row: a backup went, won, and the first copy was cancelled while queued
  // (it never started, so nothing of it was wasted).
  const route::CopyRow row = settled_row(front, std::stoull(r.headers.at("x-servelab-route-seq")));
  CHECK(row.backup_sent);
  CHECK(row.won_by == 2);
  CHECK(row.copy_cancelled);
  CHECK(row.wasted_s == 0);
}

TEST_CASE("without cancellation the losing copy runs, and its run is the request's wasted time",
          "[route][backups]") {
  TempDir dir;
  Pair servers(dir, 1.0);
  route::RouteServerOptions o = servers.front(0.2);
  o.forwarder.cancel_copies = false;
  route::RouteServer front(o);
  REQUIRE(front.start().empty());
  const std::string image = read_file(image_file("digit_7.png"));
  // b0 is busy for 1 s: the first copy waits there, the backup runs on b1 and answers; the
  // first copy then runs its whole second on b0 for nothing.
  auto busy = keep_busy(servers.b0.port(), image);
  const auto r = classify(front.port(), image);
  REQUIRE(r.status == 200);
  CHECK(r.headers.at("x-servelab-copy") == "backup");
  CHECK(busy.get().status == 200);
  const route::CopyRow row = settled_row(front, std::stoull(r.headers.at("x-servelab-route-seq")));
  CHECK(row.backup_sent);
  CHECK(row.won_by == 2);
  CHECK_FALSE(row.copy_cancelled);
  // From its start notice to its answer: its batch ran (1 s on the server; what the front
  // end sees depends on when the notices arrive, so only that it ran is asserted).
  CHECK(row.wasted_s > 0);
  CHECK(metric(front.port(), "servelab_route_copies_wasted_total") == 1);
}

TEST_CASE("no backup goes when the first copy answers or starts before the delay",
          "[route][backups]") {
  TempDir dir;
  Pair servers(dir, 2.0);
  const std::string image = read_file(image_file("digit_7.png"));
  SECTION("answered first") {
    route::RouteServer front(servers.front(60));
    REQUIRE(front.start().empty());
    const auto r = classify(front.port(), image);
    CHECK(r.status == 200);
    CHECK(r.headers.at("x-servelab-copy") == "first");
    CHECK(metric(front.port(), "servelab_route_backups_sent_total") == 0);
    CHECK(metric(front.port(), "servelab_route_won_total{copy=\"first\"") == 1);
  }
  SECTION("started first") {  // the copy starts at once on an idle server and runs 2 s
    route::RouteServer front(servers.front(1.0));
    REQUIRE(front.start().empty());
    CHECK(classify(front.port(), image).status == 200);
    CHECK(metric(front.port(), "servelab_route_backups_sent_total") == 0);
    CHECK(metric(front.port(), "servelab_route_backups_skipped_total{reason=\"started\"") == 1);
  }
  CHECK(metric(servers.b1.port(), "servelab_http_requests_total{route=\"/classify/{name}\"") == 0);
}

TEST_CASE("without cancellation a hedge goes although the first copy started (The Tail at "
          "Scale's hedged requests)", "[route][backups]") {
  TempDir dir;
  Pair servers(dir, 2.0);  // a request runs 2 s; its hedge goes after 1 s to the other server
  route::RouteServerOptions o = servers.front(1.0);
  o.forwarder.cancel_copies = false;
  route::RouteServer front(o);
  REQUIRE(front.start().empty());
  const auto r = classify(front.port(), read_file(image_file("digit_7.png")));
  CHECK(r.status == 200);
  CHECK(r.headers.at("x-servelab-copy") == "first");  // it started 1 s before its hedge
  CHECK(metric(front.port(), "servelab_route_backups_sent_total") == 1);
  CHECK(metric(front.port(), "servelab_route_backups_skipped_total{reason=\"started\"") == 0);
}

TEST_CASE("a backend that accepts and never answers: the request goes to the other host, after "
          "the timeout or as a backup", "[route][backups][faults]") {
  TempDir dir;
  TestServer b1((dir.path / "b1").string(), slow_model_server({{"noop", 0.0}}));
  REQUIRE(HttpClient(b1.port()).post_json("/register", register_json("noop", "noop")).status ==
          201);
  HoldingBackend hang;
  route::RouteServerOptions o;
  o.forwarder.backends = route::parse_backends("127.0.0.1:" + std::to_string(hang.port()) +
                                               ",127.0.0.1:" + std::to_string(b1.port()));
  o.forwarder.router = {"round-robin", {}};  // the first request goes to the hanging one
  o.forwarder.probe_interval_s = 0.2;
  const std::string image = read_file(image_file("digit_7.png"));
  SECTION("retried after the timeout") {
    o.forwarder.backend_timeout_s = 0.5;
    route::RouteServer front(o);
    REQUIRE(front.start().empty());
    const auto r = classify(front.port(), image);
    CHECK(r.status == 200);
    CHECK(r.headers.at("x-servelab-backend") == "127.0.0.1:" + std::to_string(b1.port()));
    CHECK(metric(front.port(), "servelab_route_retries_total") == 1);
    CHECK(metric(front.port(), "servelab_route_marked_down_total") == 1);
  }
  SECTION("answered by the backup") {
    o.forwarder.backend_timeout_s = 60;  // the hanging copy is never waited for
    o.forwarder.backup_after_s = 0.1;
    route::RouteServer front(o);
    REQUIRE(front.start().empty());
    const auto r = classify(front.port(), image);
    CHECK(r.status == 200);
    CHECK(r.headers.at("x-servelab-backend") == "127.0.0.1:" + std::to_string(b1.port()));
    CHECK(metric(front.port(), "servelab_route_won_total{copy=\"backup\"") == 1);
    CHECK(metric(front.port(), "servelab_route_retries_total") == 0);
  }
  CHECK(hang.held() >= 1);
}
