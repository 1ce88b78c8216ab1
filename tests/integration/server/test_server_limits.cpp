// Bounded work per request (issue 14): image limits from the header before decoding, body
// cap, registration preprocessing bounds, full queue refused before decoding, concurrent
// register/delete/classify.
#include <catch2/catch.hpp>
#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/integration/server/server_fixture.h"
#include "tests/integration/server/test_images.h"

using namespace servelab::testing;
using nlohmann::json;

namespace {

std::string limit_error(const ClientResponse& r) {
  json j = json::parse(r.body, nullptr, false);
  return j.is_object() && j.contains("error") ? j["error"].get<std::string>() : "";
}

std::string register_with(const std::string& name, const json& preprocess) {
  json j = json::parse(register_json(name, "tiny_cnn"));
  for (auto it = preprocess.begin(); it != preprocess.end(); ++it) j["preprocess"][it.key()] = *it;
  return j.dump();
}

}  // namespace

TEST_CASE("images over a limit are refused from their header", "[server][limits]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  REQUIRE(c.post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);

  CHECK(c.request("POST", "/classify/cnn", png_gray(64, 48)).status == 200);  // decodable

  auto thin = c.request("POST", "/classify/cnn", png_gray(20000, 1));  // the 58 s, 4 GB one
  CHECK(thin.status == 413);
  CHECK(limit_error(thin).find("12000") != std::string::npos);  // names the limit
  auto wide = c.request("POST", "/classify/cnn", png_gray(2000, 20));
  CHECK(wide.status == 413);
  CHECK(limit_error(wide).find("aspect") != std::string::npos);
  auto huge = c.request("POST", "/classify/cnn", jpeg_header(10000, 10000));
  CHECK(huge.status == 413);
  CHECK(limit_error(huge).find("40000000") != std::string::npos);

  auto bmp = c.request("POST", "/classify/cnn", "BM" + std::string(100, '\0'));
  CHECK(bmp.status == 400);
  CHECK(limit_error(bmp).find("PNG or JPEG") != std::string::npos);

  auto big = c.request("POST", "/classify/cnn", std::string(17u << 20, 'x'));  // over 16 MB
  CHECK(big.status == 413);
  CHECK(limit_error(big).find(std::to_string(16u << 20)) != std::string::npos);
  CHECK(c.get("/health").status == 200);
}

TEST_CASE("image limits are configurable", "[server][limits]") {
  TempDir store;
  TestServer ts(store.path.string(), [](auto&, auto& so) {
    so.image_limits.max_side = 40;
    so.image_limits.max_aspect = 2;
  });
  HttpClient c(ts.port());
  REQUIRE(c.post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);
  CHECK(c.request("POST", "/classify/cnn", png_gray(40, 30)).status == 200);
  CHECK(c.request("POST", "/classify/cnn", png_gray(41, 30)).status == 413);
  CHECK(c.request("POST", "/classify/cnn", png_gray(30, 10)).status == 413);
}

TEST_CASE("registration bounds its preprocessing", "[server][limits]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  for (const json& pp : {json{{"input_size", 4096}}, json{{"input_size", json{16, 2048}}},
                         json{{"resize", 16384}}, json{{"resize", 1025}},
                         json{{"std", {1e-45, 0.2, 0.2}}}, json{{"std", {0.0, 0.2, 0.2}}},
                         json{{"std", {-0.2, 0.2, 0.2}}}, json{{"mean", {1e300, 0, 0}}}}) {
    INFO(pp.dump());
    auto r = c.post_json("/register", register_with("m", pp));
    CHECK(r.status == 400);
    CHECK_FALSE(limit_error(r).empty());
  }
  CHECK(json::parse(c.get("/models").body)["models"].empty());
  CHECK(c.post_json("/register", register_with("m", json{{"resize", 1024}})).status == 201);
}

TEST_CASE("a model's answer carries its labels a page at a time", "[server][limits]") {
  // Pages of 4 (ServerOptions::labels_per_answer) over tiny_cnn's 10 labels: 4, 4, 2, and
  // labels_next walks them; an answer never carries more than a page.
  TempDir store;
  TestServer ts(store.path.string(), [](servelab::runtime::EngineOptions&,
                                        servelab::server::ServerOptions& so) {
    so.labels_per_answer = 4;
  });
  HttpClient c(ts.port());
  auto registered = c.post_json("/register", register_json("cnn", "tiny_cnn"));
  INFO(registered.body);
  REQUIRE(registered.status == 201);

  json m = json::parse(c.get("/models/cnn").body);
  CHECK(m["num_labels"] == 10);
  CHECK(m["labels_offset"] == 0);
  CHECK(m["labels"].size() == 4);
  CHECK(m["labels_next"] == 4);
  std::vector<std::string> all;
  std::vector<size_t> sizes;
  for (json page = m;; page = json::parse(c.get("/models/cnn?labels_offset=" +
                                                std::to_string(page["labels_next"].get<size_t>()))
                                              .body)) {
    sizes.push_back(page["labels"].size());
    for (const json& l : page["labels"]) all.push_back(l.get<std::string>());
    if (page["labels_next"].is_null()) break;
  }
  CHECK(sizes == std::vector<size_t>{4, 4, 2});
  REQUIRE(all.size() == 10);
  for (size_t i = 0; i < all.size(); ++i) CHECK(all[i] == "tiny_cnn_class_" + std::to_string(i));
  CHECK(json::parse(c.get("/models/cnn?labels_offset=99999").body)["labels"].empty());
  CHECK(c.get("/models/cnn?labels_offset=-1").status == 400);
  CHECK(c.get("/models/cnn?labels_offset=1e3").status == 400);
  CHECK(json::parse(c.get("/models").body)["models"][0].count("labels") == 0);
}

TEST_CASE("a full queue refuses a request before decoding its image", "[server][limits]") {
  TempDir store;
  TestServer ts(store.path.string(), [](auto& eo, auto&) {
    eo.control.queue_bound = 1;
    eo.control.quantum = 3600;  // nothing is dispatched before the first tick: the queue stays
  });
  HttpClient c(ts.port());
  REQUIRE(c.post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);
  std::string jpg = read_file(image_file("gradient.jpg"));
  std::thread waiting([&] {  // fills the queue; answered when the server stops
    HttpClient w(ts.port());
    try {
      w.request("POST", "/classify/cnn", jpg);
    } catch (const std::exception&) {
    }
  });
  int queued = 0;
  for (int i = 0; i < 2000 && queued < 1; ++i) {
    queued = json::parse(c.get("/models/cnn").body)["queued"].get<int>();
    if (queued < 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(queued == 1);
  // A header that passes the guard but cannot be decoded: 503 proves no decode was tried.
  auto r = c.request("POST", "/classify/cnn", jpeg_header(64, 64));
  CHECK(r.status == 503);
  ts.server->stop();
  ts.server.reset();
  waiting.join();
}

TEST_CASE("concurrent register, delete and classify: removed models answer 404, lists never fail",
          "[server][limits]") {
  TempDir store;
  TestServer ts(store.path.string());
  std::string jpg = read_file(image_file("gradient.jpg"));
  std::atomic<bool> done{false};
  std::atomic<int> bad_classify{0}, bad_list{0}, classified{0};
  std::thread admin([&] {
    HttpClient a(ts.port());
    for (int i = 0; i < 15; ++i) {
      a.post_json("/register", register_json("m", "tiny_cnn"));
      a.request("DELETE", "/models/m");
    }
    done = true;
  });
  std::vector<std::thread> users;
  for (int t = 0; t < 3; ++t) {
    users.emplace_back([&, t] {
      HttpClient u(ts.port());
      while (!done) {
        if (t == 0) {
          if (u.get("/models").status != 200) bad_list++;
          continue;
        }
        int st = u.request("POST", "/classify/m", jpg).status;
        if (st == 200) classified++;
        if (st != 200 && st != 404) bad_classify++;
      }
    });
  }
  admin.join();
  for (auto& u : users) u.join();
  CHECK(bad_classify == 0);
  CHECK(bad_list == 0);
}
