// KServe v2 batches (first input dimension N > 1) and the classification extension with the
// real Engine over 127.0.0.1: a batch answers what N single requests answer, bounds and
// malformed shapes are refused, one failed item fails the whole answer, and classification
// strings match the raw scores of the same input.
#include <catch2/catch.hpp>
#include <cstring>
#include <nlohmann/json.hpp>
#include <chrono>
#include <numeric>
#include <thread>

#include "tests/integration/server/server_fixture.h"

using namespace servelab;
using namespace servelab::testing;
using nlohmann::json;

namespace {

constexpr size_t kItem = 3 * 32 * 32;  // tiny_cnn's input: 3 x 32 x 32 floats

// Item k of a test batch: a pattern that differs from item to item.
std::vector<float> item(size_t k) {
  std::vector<float> v(kItem);
  for (size_t i = 0; i < kItem; ++i)
    v[i] = static_cast<float>((i * (k + 3) + 7 * k) % 101) / 101.0f - 0.5f;
  return v;
}

std::vector<float> concat(size_t n) {
  std::vector<float> all;
  for (size_t k = 0; k < n; ++k) {
    auto v = item(k);
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

json infer_body(int64_t n, const std::vector<float>& values, const json& outputs = nullptr) {
  json in = {{"name", "INPUT__0"}, {"datatype", "FP32"}, {"shape", {n, 3, 32, 32}},
             {"data", values}};
  json j = {{"inputs", {in}}};
  if (!outputs.is_null()) j["outputs"] = outputs;
  return j;
}

json classification(int k) {
  return {{{"name", "OUTPUT__0"}, {"parameters", {{"classification", k}}}}};
}

// The logits of one single-item request.
std::vector<float> single(HttpClient& c, const std::string& model, size_t k) {
  auto res = c.post_json("/v2/models/" + model + "/infer", infer_body(1, item(k)).dump());
  INFO(res.body.substr(0, 300));
  REQUIRE(res.status == 200);
  return json::parse(res.body)["outputs"][0]["data"].get<std::vector<float>>();
}

std::string error_of(const ClientResponse& r) {
  return json::parse(r.body)["error"].get<std::string>();
}

}  // namespace

TEST_CASE("v2 batch of 3 answers the rows of 3 single requests in order", "[server][v2][batch]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  REQUIRE(c.post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);
  std::vector<std::vector<float>> rows;
  for (size_t k = 0; k < 3; ++k) rows.push_back(single(c, "cnn", k));
  REQUIRE(rows[0] != rows[1]);  // the items differ, so order is observable

  json body = infer_body(3, concat(3));
  body["parameters"] = {{"slo_ms", 60000}};
  auto res = c.post_json("/v2/models/cnn/infer", body.dump());
  INFO(res.body.substr(0, 300));
  REQUIRE(res.status == 200);
  json out = json::parse(res.body)["outputs"][0];
  CHECK(out["shape"] == json({3, 10}));
  auto data = out["data"].get<std::vector<float>>();
  REQUIRE(data.size() == 30);
  for (size_t k = 0; k < 3; ++k)
    for (size_t i = 0; i < 10; ++i) CHECK(data[10 * k + i] == Approx(rows[k][i]).margin(1e-4));
  // Each item is one request with its own SLO.
  CHECK(metric_sum(c.get("/metrics").body,
                   "servelab_slo_requests_total{model=\"cnn\",outcome=\"met\"") == 3);

  // The same batch as binary tensors, in and out.
  std::vector<float> all = concat(3);
  json in = {{"name", "INPUT__0"}, {"datatype", "FP32"}, {"shape", {3, 3, 32, 32}},
             {"parameters", {{"binary_data_size", all.size() * sizeof(float)}}}};
  json head = {{"inputs", {in}}, {"parameters", {{"binary_data_output", true}}}};
  std::string bin_body = head.dump();
  HttpClient bin(ts.port());
  bin.set_header("Inference-Header-Content-Length", std::to_string(bin_body.size()));
  bin_body.append(reinterpret_cast<const char*>(all.data()), all.size() * sizeof(float));
  res = bin.request("POST", "/v2/models/cnn/infer", bin_body, "application/octet-stream");
  REQUIRE(res.status == 200);
  size_t len = std::stoul(res.headers["inference-header-content-length"]);
  REQUIRE(len + 30 * sizeof(float) == res.body.size());
  CHECK(json::parse(res.body.substr(0, len))["outputs"][0]["shape"] == json({3, 10}));
  std::vector<float> got(30);
  std::memcpy(got.data(), res.body.data() + len, 30 * sizeof(float));
  for (size_t k = 0; k < 3; ++k)
    for (size_t i = 0; i < 10; ++i) CHECK(got[10 * k + i] == Approx(rows[k][i]).margin(1e-4));
}

TEST_CASE("v2 batches over the limit and malformed shapes are refused", "[server][v2][batch]") {
  TempDir store;
  TestServer ts(store.path.string(),
                [](runtime::EngineOptions&, server::ServerOptions& s) { s.v2_max_batch = 4; });
  HttpClient c(ts.port());
  REQUIRE(c.post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);
  // Over the limit: refused from the shape alone (no data sent, nothing allocated: a batch
  // of 2^40 items would need 12 PiB).
  for (int64_t n : {int64_t{5}, int64_t{1} << 40}) {
    auto res = c.post_json("/v2/models/cnn/infer", infer_body(n, {}).dump());
    INFO(res.body);
    CHECK(res.status == 413);
    CHECK_THAT(error_of(res), Catch::Contains("limit of 4"));
  }
  CHECK(c.post_json("/v2/models/cnn/infer", infer_body(4, concat(4)).dump()).status == 200);

  // Shape and data disagree.
  auto res = c.post_json("/v2/models/cnn/infer", infer_body(2, item(0)).dump());
  CHECK(res.status == 400);
  CHECK_THAT(error_of(res), Catch::Contains("holds 6144"));
  res = c.post_json("/v2/models/cnn/infer", infer_body(1, concat(2)).dump());
  CHECK(res.status == 400);
  CHECK_THAT(error_of(res), Catch::Contains("more values"));
  res = c.post_json("/v2/models/cnn/infer", infer_body(0, {}).dump());
  CHECK(res.status == 400);
  CHECK_THAT(error_of(res), Catch::Contains("at least 1"));
  json wrong = infer_body(2, concat(2));
  wrong["inputs"][0]["shape"] = {2, 3, 32, 16};
  res = c.post_json("/v2/models/cnn/infer", wrong.dump());
  CHECK(res.status == 400);
  CHECK_THAT(error_of(res), Catch::Contains("[-1, 3, 32, 32]"));
  // Binary data one item short of its shape.
  std::vector<float> two = concat(2);
  json in = {{"name", "INPUT__0"}, {"datatype", "FP32"}, {"shape", {3, 3, 32, 32}},
             {"parameters", {{"binary_data_size", two.size() * sizeof(float)}}}};
  std::string body = json({{"inputs", {in}}}).dump();
  HttpClient bin(ts.port());
  bin.set_header("Inference-Header-Content-Length", std::to_string(body.size()));
  body.append(reinterpret_cast<const char*>(two.data()), two.size() * sizeof(float));
  res = bin.request("POST", "/v2/models/cnn/infer", body, "application/octet-stream");
  CHECK(res.status == 400);
  CHECK_THAT(error_of(res), Catch::Contains("does not match its shape"));
}

TEST_CASE("v2 batch fails as a whole when its engine batch fails", "[server][v2][batch]") {
  // fails_large_batch raises for batches of more than 4. The fixed policy (size 8, long
  // max_wait) puts the 8 items of one request into one batch: the policy sees 8 requests.
  TempDir store;
  TestServer ts(store.path.string(), [](runtime::EngineOptions& e, server::ServerOptions&) {
    e.control.batching = {"fixed", PolicyParams({{"size", "8"}, {"max_wait", "0.5"}})};
  });
  HttpClient c(ts.port());
  REQUIRE(c.post_json("/register", register_json("f", "fails_large_batch")).status == 201);
  auto res = c.post_json("/v2/models/f/infer", infer_body(8, concat(8)).dump());
  INFO(res.body.substr(0, 300));
  CHECK(res.status == 500);
  CHECK_THAT(error_of(res), Catch::Contains("batch larger than 4"));
  // Nothing of it lingers: a small batch on the same connection is answered in full.
  res = c.post_json("/v2/models/f/infer", infer_body(2, concat(2)).dump());
  REQUIRE(res.status == 200);
  CHECK(json::parse(res.body)["outputs"][0]["shape"] == json({2, 10}));
  CHECK(metric_sum(c.get("/metrics").body,
                   "servelab_request_failures_total{model=\"f\",reason=\"failed\"") == 8);
}

TEST_CASE("v2 batch cancels its queued items when one fails", "[server][v2][batch]") {
  // Batches of 5 (fixed policy, one worker): fails_large_batch raises for the first five
  // items. Their failure answers the request and cancels every item still queued or in a
  // later batch, so exactly those five count as failed, the rest as cancelled (before: the
  // later batches ran and failed too, 15 failures for one answer).
  TempDir store;
  TestServer ts(store.path.string(), [](runtime::EngineOptions& e, server::ServerOptions&) {
    e.control.workers = 1;
    e.control.batching = {"fixed", PolicyParams({{"size", "5"}, {"max_wait", "30"}})};
  });
  HttpClient c(ts.port());
  REQUIRE(c.post_json("/register", register_json("f", "fails_large_batch")).status == 201);
  auto res = c.post_json("/v2/models/f/infer", infer_body(15, concat(15)).dump());
  CHECK(res.status == 500);
  CHECK_THAT(error_of(res), Catch::Contains("batch larger than 4"));
  // Items cancelled inside a running batch are answered when it ends: wait for the count.
  const std::string failed = "servelab_request_failures_total{model=\"f\",reason=\"failed\"";
  const std::string cancelled = "servelab_request_failures_total{model=\"f\",reason=\"cancelled\"";
  const std::string arrived = "servelab_requests_total{model=\"f\"";
  std::string metrics;
  for (int i = 0; i < 200; ++i) {
    metrics = c.get("/metrics").body;
    if (metric_sum(metrics, failed) + metric_sum(metrics, cancelled) == metric_sum(metrics, arrived))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  INFO(metrics);
  CHECK(metric_sum(metrics, failed) == 5);
  CHECK(metric_sum(metrics, failed) + metric_sum(metrics, cancelled) == metric_sum(metrics, arrived));
}

TEST_CASE("v2 classification gives the top K of the raw scores", "[server][v2][classification]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  REQUIRE(c.post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);
  CHECK(json::parse(c.get("/v2").body)["extensions"][1] == "classification");
  std::vector<std::vector<float>> rows = {single(c, "cnn", 0), single(c, "cnn", 1)};

  auto res = c.post_json("/v2/models/cnn/infer", infer_body(2, concat(2), classification(2)).dump());
  INFO(res.body);
  REQUIRE(res.status == 200);
  json out = json::parse(res.body)["outputs"][0];
  CHECK(out["name"] == "OUTPUT__0");
  CHECK(out["datatype"] == "BYTES");
  CHECK(out["shape"] == json({2, 2}));
  auto strings = out["data"].get<std::vector<std::string>>();
  REQUIRE(strings.size() == 4);
  for (size_t k = 0; k < 2; ++k) {
    // The expected order, computed here from the raw scores.
    std::vector<size_t> order(10);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return rows[k][a] > rows[k][b]; });
    for (size_t j = 0; j < 2; ++j) {
      const std::string& s = strings[2 * k + j];
      INFO(s);
      const size_t first = s.find(':'), second = s.find(':', first + 1);
      REQUIRE(second != std::string::npos);
      const size_t index = std::stoul(s.substr(first + 1, second - first - 1));
      CHECK(index == order[j]);
      CHECK(std::stof(s.substr(0, first)) == Approx(rows[k][order[j]]).margin(1e-4));
      CHECK(s.substr(second + 1) == "tiny_cnn_class_" + std::to_string(order[j]));
    }
  }

  // Binary output of BYTES: a 4-byte little-endian length before each string.
  json j = infer_body(1, item(0), classification(3));
  j["outputs"][0]["parameters"]["binary_data"] = true;
  res = c.post_json("/v2/models/cnn/infer", j.dump());
  REQUIRE(res.status == 200);
  size_t len = std::stoul(res.headers["inference-header-content-length"]);
  std::string tail = res.body.substr(len);
  std::vector<std::string> got;
  for (size_t at = 0; at + 4 <= tail.size();) {
    uint32_t n = 0;
    for (int b = 0; b < 4; ++b) n |= uint32_t(static_cast<unsigned char>(tail[at + b])) << (8 * b);
    got.push_back(tail.substr(at + 4, n));
    at += 4 + n;
  }
  REQUIRE(got.size() == 3);
  res = c.post_json("/v2/models/cnn/infer", infer_body(1, item(0), classification(3)).dump());
  CHECK(json::parse(res.body)["outputs"][0]["data"].get<std::vector<std::string>>() == got);

  for (int k : {0, 11, -2}) {
    res = c.post_json("/v2/models/cnn/infer", infer_body(1, item(0), classification(k)).dump());
    INFO(k << ": " << res.body);
    CHECK(res.status == 400);
    CHECK_THAT(error_of(res), Catch::Contains("1..10"));
  }
}
