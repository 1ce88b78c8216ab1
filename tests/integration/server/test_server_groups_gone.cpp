// Clients that go take their queued group requests with them, over 127.0.0.1: a request that
// waits in a dispatched group's queue leaves it when its connection closes, so it never
// reaches a member and never fills a later batch.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/integration/server/group_fixture.h"
#include "tests/integration/server/server_fixture.h"

using namespace servelab::testing;
using nlohmann::json;

namespace {

// A connection that sends `raw` and closes without reading the answer.
class RawClient {
 public:
  RawClient(uint16_t port, const std::string& raw) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    for (size_t sent = 0; sent < raw.size();) {
      const ssize_t n = ::send(fd_, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
      REQUIRE(n > 0);
      sent += size_t(n);
    }
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  ~RawClient() { close(); }

 private:
  int fd_;
};

std::string classify_request(const std::string& target, const std::string& image) {
  return "POST " + target + " HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\n"
         "Content-Length: " + std::to_string(image.size()) + "\r\n\r\n" + image;
}

// The queue length GET `path` reports (a group's or a model's "queued"), once it equals `want`
// or after 10 s (then the last reading).
long queued_at_eventually(HttpClient& c, const std::string& path, long want) {
  long queued = -1;
  for (int i = 0; i < 100; ++i) {
    queued = json::parse(c.get(path).body).value("queued", -1L);
    if (queued == want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return queued;
}

long queued_eventually(HttpClient& c, const std::string& group, long want) {
  return queued_at_eventually(c, "/groups/" + group, want);
}

long model_queued_eventually(HttpClient& c, const std::string& model, long want) {
  return queued_at_eventually(c, "/models/" + model, want);
}

double cancelled_of(HttpClient& c, const std::string& model) {
  return metric_sum(c.get("/metrics").body, "servelab_request_failures_total{model=\"" + model +
                                                "\",reason=\"cancelled\"");
}

// Members hold a lone request in their queues for 30 s (max-delay batching): only a cancel
// empties them sooner.
void members_hold_requests(servelab::runtime::EngineOptions& eo,
                           servelab::server::ServerOptions&) {
  eo.control.request_timeout = 60;
  eo.control.batching.name = "max-delay";
  eo.control.batching.params.set("max_delay", "30");
  eo.control.max_batch = 16;
}

double batches_run(HttpClient& c, const std::string& model) {
  return metric_sum(c.get("/metrics").body, "servelab_batches_total{model=\"" + model + "\"");
}

}  // namespace

TEST_CASE("a client that closes takes its queued group request with it", "[server][groups]") {
  TempDir store;
  // Members run what the dispatcher releases together as one batch. The request timeout
  // only ends the test when a request is left alone in the queue (a failure: 504).
  TestServer ts(store.path.string(), [](servelab::runtime::EngineOptions& eo,
                                        servelab::server::ServerOptions&) {
    eo.control.request_timeout = 30;
    eo.control.batching.name = "max-delay";
    eo.control.batching.params.set("max_delay", "0");
    eo.control.max_batch = 16;
  });
  HttpClient c(ts.port());
  register_digits(c);
  json body = group_body("clip", kDigits);
  body.erase("subset");
  body["dispatch"] = {{"name", "clipper"}, {"batch_size", 2}};
  REQUIRE(c.post_json("/groups", body.dump()).status == 201);
  const std::string image = sample_images().front();

  // Clipper releases only a batch of 2: the lone request waits, then its client goes.
  RawClient gone(ts.port(), classify_request("/classify/clip", image));
  REQUIRE(queued_eventually(c, "clip", 1) == 1);
  gone.close();
  CHECK(queued_eventually(c, "clip", 0) == 0);

  // Two requests of clients that stay make the first batch: the gone one is not in it.
  std::vector<ClientResponse> answers(2);
  std::vector<std::thread> senders;
  for (size_t i = 0; i < 2; ++i)
    senders.emplace_back([&, i] {
      HttpClient own(ts.port());
      answers[i] = own.request("POST", "/classify/clip", image, "image/png");
    });
  for (std::thread& t : senders) t.join();
  for (const ClientResponse& a : answers) {
    INFO(a.body);
    CHECK(a.status == 200);
  }
  for (const std::string& m : kDigits) CHECK(batches_run(c, m) == 1);
  const std::string sizes = "servelab_batch_size_sum{model=\"";
  for (const std::string& m : kDigits) {
    INFO(m);
    CHECK(metric_sum(c.get("/metrics").body, sizes + m + "\"") == 2);
  }
  CHECK(c.get("/health").status == 200);
}

TEST_CASE("a client that closes takes its group request's member requests with it",
          "[server][groups]") {
  // Without a dispatcher (subset "all") the members' requests are queued at once; with one
  // (Clipper, batches of 1) they are queued once released. Either way they wait in the
  // members' queues (max-delay 30 s) when the client goes, and must leave them unrun.
  const json clipper_of_one = {{"name", "clipper"}, {"batch_size", 1}};
  for (const bool dispatched : {false, true}) {
    INFO((dispatched ? "dispatched (clipper)" : "subset all"));
    TempDir store;
    TestServer ts(store.path.string(), members_hold_requests);
    HttpClient c(ts.port());
    register_digits(c);
    json body = group_body("vote", kDigits);
    if (dispatched) {
      body.erase("subset");
      body["dispatch"] = clipper_of_one;
    }
    REQUIRE(c.post_json("/groups", body.dump()).status == 201);

    RawClient gone(ts.port(), classify_request("/classify/vote", sample_images().front()));
    for (const std::string& m : kDigits) REQUIRE(model_queued_eventually(c, m, 1) == 1);
    gone.close();
    for (const std::string& m : kDigits) {
      INFO(m);
      CHECK(model_queued_eventually(c, m, 0) == 0);
      CHECK(cancelled_of(c, m) == 1);
      CHECK(batches_run(c, m) == 0);  // nothing of it ran
    }
    CHECK(c.get("/health").status == 200);
  }
}
