// Model groups with an ensemble dispatcher (group_dispatch.h) on the real server over
// 127.0.0.1, with the three real digits models: the schedules the dispatchers' rules give by
// hand (Clipper waits for a full batch; greedy waits until c(b) + w(q0) + delta tau >= tau),
// the vote against the members asked directly, the weights file confined to --model-root,
// and queued requests answered when their group is deleted.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "learn/rafiki_rl.h"
#include "tests/integration/server/group_fixture.h"
#include "tests/integration/server/server_fixture.h"

using namespace servelab::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Requests sent from their own threads (one connection each), answered in any order.
struct Senders {
  uint16_t port;
  std::vector<std::thread> threads;
  std::vector<ClientResponse> answers;
  std::atomic<int> answered{0};
  explicit Senders(uint16_t p, size_t n) : port(p), answers(n) {}
  void send(size_t i, const std::string& target, const std::string& image,
            const std::string& slo_ms = "") {
    threads.emplace_back([this, i, target, image, slo_ms] {
      HttpClient c(port);
      if (!slo_ms.empty()) c.set_header("X-SLO-Ms", slo_ms);
      answers[i] = c.request("POST", target, image, "image/png");
      ++answered;
    });
  }
  void join() {
    for (std::thread& t : threads) t.join();
    threads.clear();
  }
  ~Senders() { join(); }
};

json dispatch_group(const std::string& name, const json& dispatch) {
  json body = group_body(name, kDigits);
  body.erase("subset");
  body["dispatch"] = dispatch;
  return body;
}

// Members run what the dispatcher releases together as one batch.
void one_batch_per_release(servelab::runtime::EngineOptions& eo, servelab::server::ServerOptions&) {
  eo.control.batching.name = "max-delay";
  eo.control.batching.params.set("max_delay", "0");
  eo.control.max_batch = 16;
}

// Registers kDigits by uploading their files (the server's model root is another folder).
void upload_digits(HttpClient& c) {
  for (const std::string& m : kDigits) {
    auto r = c.post_form("/register", register_form(m, m));
    INFO(r.body);
    REQUIRE(r.status == 201);
  }
}

double batches_of(HttpClient& c, const std::string& model) {
  return metric_sum(c.get("/metrics").body, "servelab_batches_total{model=\"" + model + "\"");
}

}  // namespace

TEST_CASE("clipper dispatch holds requests until a full batch waits, then every member runs it",
          "[server][groups]") {
  TempDir store;
  TestServer ts(store.path.string(), one_batch_per_release);
  HttpClient c(ts.port());
  register_digits(c);
  auto def = c.post_json("/groups", dispatch_group("clip", {{"name", "clipper"},
                                                            {"batch_size", 3}}).dump());
  INFO(def.body);
  REQUIRE(def.status == 201);
  CHECK(json::parse(c.get("/groups/clip").body)["dispatch"]["name"] == "clipper");

  const std::vector<std::string> images = sample_images();
  REQUIRE(images.size() >= 3);
  Senders s(ts.port(), 3);
  s.send(0, "/classify/clip", images[0]);
  s.send(1, "/classify/clip", images[1]);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  CHECK(s.answered == 0);  // two wait: Clipper releases only a batch of 3
  for (const std::string& m : kDigits) CHECK(batches_of(c, m) == 0);
  s.send(2, "/classify/clip", images[2]);
  s.join();
  for (size_t i = 0; i < 3; ++i) {
    INFO(s.answers[i].body);
    REQUIRE(s.answers[i].status == 200);
    json a = json::parse(s.answers[i].body);
    CHECK(a["voters"] == json(kDigits));
    std::vector<std::string> labels;
    std::vector<double> acc;
    for (const std::string& m : kDigits) {
      labels.push_back(top1(c, m, images[i]));
      acc.push_back(manifest_accuracy(m));
    }
    CHECK(a["label"] == expected_vote(labels, acc));
  }
  // One batch of three per member, before the direct questions above (one batch each).
  for (const std::string& m : kDigits) CHECK(batches_of(c, m) == 1 + 3);
}

TEST_CASE("greedy dispatch waits until c(b) + w(oldest) + delta tau reaches tau",
          "[server][groups]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  register_digits(c);
  // No cost profile: c(b) = 0, so a pair (below max(B) = 4, which would go at once) goes
  // (1 - delta) tau after the older one arrived. tau comes from each request's own X-SLO-Ms
  // (the group's deadline reaches the dispatcher) or from slo_ms.
  REQUIRE(c.post_json("/groups", dispatch_group("greedy_all", {{"name", "greedy"},
                                                                {"batch_sizes", {2, 4}},
                                                                {"delta", 0.25}}).dump())
              .status == 201);
  REQUIRE(c.post_json("/groups", dispatch_group("greedy_one", {{"name", "greedy"},
                                                                {"batch_sizes", {2, 4}},
                                                                {"members", "one"},
                                                                {"slo_ms", 400}}).dump())
              .status == 201);
  const std::string image = sample_images().front();
  for (const std::string group : {"greedy_all", "greedy_one"}) {
    Senders s(ts.port(), 2);
    const auto start = std::chrono::steady_clock::now();
    s.send(0, "/classify/" + group, image, "400");
    s.send(1, "/classify/" + group, image, "400");
    s.join();
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO(group << " took " << took << " s");
    const double due = group == "greedy_all" ? 0.75 * 0.4 : 0.9 * 0.4;
    CHECK(took >= due - 0.01);
    CHECK(took < due + 1.0);
    for (const ClientResponse& r : s.answers) {
      INFO(r.body);
      REQUIRE(r.status == 200);
      // all: every member; one: the most accurate idle member alone (digits_cnn).
      const json voters = json::parse(r.body)["voters"];
      CHECK(voters == (group == "greedy_all" ? json(kDigits) : json({"digits_cnn"})));
    }
  }
}

TEST_CASE("a dispatcher's weights file is read only under --model-root", "[server][groups]") {
  servelab::learn::register_policies();  // rafiki-rl, as `servelab serve` does
  TempDir store, root;
  const fs::path shipped = fs::path(SERVELAB_SOURCE_DIR) / "experiments/rafiki/weights" /
                           "rafiki-rl-ensemble.json";
  fs::copy_file(shipped, root.path / "rl.json");
  const json rl = {{"name", "rafiki-rl"}, {"weights", (root.path / "rl.json").string()}};
  {
    TestServer ts(store.path.string(), [](auto&, servelab::server::ServerOptions& so) {
      so.model_root.clear();
    });
    HttpClient c(ts.port());
    upload_digits(c);
    auto r = c.post_json("/groups", dispatch_group("rl", rl).dump());
    INFO(r.body);
    CHECK(r.status == 403);  // no root: server-side files are off
  }
  TempDir store2;
  TestServer ts(store2.path.string(), [&](auto& eo, servelab::server::ServerOptions& so) {
    so.model_root = root.path.string();
    one_batch_per_release(eo, so);
  });
  HttpClient c(ts.port());
  upload_digits(c);
  json outside = rl;
  outside["weights"] = shipped.string();
  auto refused = c.post_json("/groups", dispatch_group("rl", outside).dump());
  INFO(refused.body);
  CHECK(refused.status == 400);
  CHECK(refused.body.find(shipped.string()) == std::string::npos);  // no echo of the path
  auto def = c.post_json("/groups", dispatch_group("rl", rl).dump());
  INFO(def.body);
  REQUIRE(def.status == 201);

  // RL picks the batch (min(b, queue)) and members; every request is answered by some.
  Senders s(ts.port(), 6);
  const std::vector<std::string> images = sample_images();
  for (size_t i = 0; i < 6; ++i) s.send(i, "/classify/rl", images[i % images.size()], "2000");
  s.join();
  for (const ClientResponse& r : s.answers) {
    INFO(r.body);
    REQUIRE(r.status == 200);
    CHECK(!json::parse(r.body)["voters"].empty());
  }
}

TEST_CASE("deleting a group answers its queued requests 404", "[server][groups]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  register_digits(c);
  REQUIRE(c.post_json("/groups", dispatch_group("clip", {{"name", "clipper"},
                                                         {"batch_size", 8}}).dump())
              .status == 201);
  Senders s(ts.port(), 1);
  s.send(0, "/classify/clip", sample_images().front());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(s.answered == 0);
  CHECK(c.request("DELETE", "/groups/clip").status == 200);
  s.join();
  INFO(s.answers[0].body);
  CHECK(s.answers[0].status == 404);
  CHECK(c.get("/health").status == 200);
}

// A lone request that a dispatcher never releases (Clipper waits for a batch of 8) still ends:
// timed out at --request-timeout-ms (504), or, with late requests dropped, at its deadline
// (504, status "dropped"); the group's queue is empty after, and the server keeps serving.
TEST_CASE("a dispatched group's lone request ends at the request timeout or its deadline",
          "[server][groups]") {
  for (bool drop_late : {false, true}) {
    CAPTURE(drop_late);
    TempDir store;
    TestServer ts(store.path.string(), [drop_late](servelab::runtime::EngineOptions& eo,
                                                   servelab::server::ServerOptions&) {
      if (drop_late) eo.control.drop_late = true;
      else eo.control.request_timeout = 0.3;
    });
    HttpClient c(ts.port());
    register_digits(c);
    REQUIRE(c.post_json("/groups", dispatch_group("clip", {{"name", "clipper"},
                                                           {"batch_size", 8}}).dump())
                .status == 201);
    Senders s(ts.port(), 1);
    s.send(0, "/classify/clip", sample_images().front(), drop_late ? "300" : "");
    s.join();  // without an end, the client would wait for ever
    INFO(s.answers[0].body);
    CHECK(s.answers[0].status == 504);
    if (drop_late) CHECK(json::parse(s.answers[0].body)["status"] == "dropped");
    else CHECK_THAT(s.answers[0].body, Catch::Contains("timed out"));
    for (const std::string& m : kDigits) CHECK(batches_of(c, m) == 0);  // never released
    CHECK(c.get("/health").status == 200);
  }
}
