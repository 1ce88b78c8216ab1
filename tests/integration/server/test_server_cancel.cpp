// DELETE /requests/{id} over real loopback: a queued request removed, a running one's result
// discarded (both answered 499), a cancel for an unknown or answered id changing nothing, the
// "102 Processing" a request asks for with X-Servelab-Notify-Start, hostile ids refused, and
// the id list staying empty after repeated cancels. The model is the profiled executor's
// `noop` whose every batch sleeps, on one worker: one request runs while the next waits.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/integration/server/server_fixture.h"
#include "tests/integration/server/slow_model.h"

using namespace servelab;
using namespace servelab::testing;
using nlohmann::json;

namespace {

int connect_to(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

// Reads from `fd` into *got until it holds `want` (true) or 60 s pass or it closes (false).
bool read_until(int fd, std::string* got, const std::string& want) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (got->find(want) == std::string::npos) {
    if (std::chrono::steady_clock::now() > limit) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    got->append(buf, size_t(n));
  }
  return true;
}

std::string classify_raw(const std::string& image, const std::string& headers) {
  return "POST /classify/noop HTTP/1.1\r\nHost: x\r\n" + headers +
         "Content-Length: " + std::to_string(image.size()) + "\r\n\r\n" + image;
}

ClientResponse classify(uint16_t port, const std::string& image, const std::string& id) {
  HttpClient c(port);
  if (!id.empty()) c.set_header("X-Request-Id", id);
  return c.request("POST", "/classify/noop", image, "image/png");
}

ClientResponse cancel(uint16_t port, const std::string& id) {
  return HttpClient(port).request("DELETE", "/requests/" + id);
}

double metric(uint16_t port, const std::string& prefix) {
  return metric_sum(HttpClient(port).get("/metrics").body, prefix);
}

// Waits (hang guard: 60 s) until `noop` has a request in its queue.
void wait_queued(uint16_t port) {
  for (int i = 0; i < 600 && metric(port, "servelab_queued_requests{model=\"noop\"") < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

}  // namespace

TEST_CASE("DELETE /requests/{id} removes a queued request, discards a running one and changes "
          "nothing for an unknown or answered id", "[server][cancel]") {
  TempDir dir;
  TestServer s((dir.path / "store").string(), slow_model_server({{"noop", 3.0}}));
  REQUIRE(HttpClient(s.port()).post_json("/register", register_json("noop", "noop")).status ==
          201);
  const std::string image = read_file(image_file("digit_7.png"));

  // The running request asked to hear when it starts: 102 with its id, before its answer.
  const int running = connect_to(s.port());
  const std::string r1 =
      classify_raw(image, "X-Request-Id: run-1\r\nX-Servelab-Notify-Start: 1\r\n");
  REQUIRE(::send(running, r1.data(), r1.size(), MSG_NOSIGNAL) == ssize_t(r1.size()));
  std::string got;
  REQUIRE(read_until(running, &got, "\r\n\r\n"));
  CHECK(got.rfind("HTTP/1.1 102 Processing\r\n", 0) == 0);
  CHECK(got.find("X-Servelab-Started: run-1\r\n") != std::string::npos);

  auto queued = std::async(std::launch::async, [&] { return classify(s.port(), image, "q-1"); });
  wait_queued(s.port());
  auto c = cancel(s.port(), "q-1");
  INFO(c.body);
  REQUIRE(c.status == 200);
  CHECK(json::parse(c.body) == json({{"id", "q-1"}, {"cancelled", true}, {"was", "queued"}}));
  CHECK(queued.get().status == 499);

  // An id in flight is not taken twice; a cancel of the running request answers it 499 when
  // its batch ends, and a second cancel meanwhile changes nothing.
  CHECK(classify(s.port(), image, "run-1").status == 409);
  c = cancel(s.port(), "run-1");
  REQUIRE(c.status == 200);
  CHECK(json::parse(c.body)["was"] == "running");
  const auto again = cancel(s.port(), "run-1");
  CHECK((again.status == 404 || json::parse(again.body)["cancelled"] == false));
  REQUIRE(read_until(running, &got, "HTTP/1.1 499 "));
  ::close(running);

  // Answered or never seen: 404, nothing listed, nothing counted but the miss.
  CHECK(cancel(s.port(), "run-1").status == 404);
  for (int i = 0; i < 50; ++i)
    CHECK(cancel(s.port(), "never-sent-" + std::to_string(i)).status == 404);
  CHECK(metric(s.port(), "servelab_request_ids ") == 0);
  CHECK(metric(s.port(), "servelab_request_cancels_total{result=\"removed\"") == 1);
  CHECK(metric(s.port(), "servelab_request_cancels_total{result=\"discarded\"") == 1);
  CHECK(metric(s.port(), "servelab_request_cancels_total{result=\"unknown\"") >= 51);
  CHECK(metric(s.port(), "servelab_request_failures_total{model=\"noop\",reason=\"cancelled\"") ==
        2);
}

TEST_CASE("request ids are bounded and plain, and a notification needs one", "[server][cancel]") {
  TempDir dir;
  TestServer s((dir.path / "store").string(), slow_model_server({{"noop", 0.0}}));
  REQUIRE(HttpClient(s.port()).post_json("/register", register_json("noop", "noop")).status ==
          201);
  const std::string image = read_file(image_file("digit_7.png"));
  CHECK(classify(s.port(), image, "ok-1").status == 200);
  CHECK(classify(s.port(), image, std::string(129, 'a')).status == 400);
  CHECK(classify(s.port(), image, "a/b").status == 400);
  CHECK(classify(s.port(), image, "a b").status == 400);
  HttpClient c(s.port());
  c.set_header("X-Servelab-Notify-Start", "1");
  const auto r = c.request("POST", "/classify/noop", image, "image/png");
  CHECK(r.status == 400);
  CHECK(r.body.find("needs an X-Request-Id") != std::string::npos);
  CHECK(cancel(s.port(), "a%2Fb").status == 400);
  CHECK(cancel(s.port(), "%00").status == 400);
  CHECK(metric(s.port(), "servelab_request_ids ") == 0);
}
