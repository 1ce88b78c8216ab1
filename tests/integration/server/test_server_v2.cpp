// The KServe v2 protocol endpoints with the real Engine over 127.0.0.1: health, metadata,
// readiness, JSON and binary-tensor inference checked against the image path, and errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/runtime/preprocess.h"
#include "engine/server/register_request.h"
#include "tests/integration/server/server_fixture.h"

using namespace servelab;
using namespace servelab::testing;
using nlohmann::json;

namespace {

std::string infer_json(const std::vector<float>& values, int h, int w) {
  json in = {{"name", "INPUT__0"}, {"datatype", "FP32"}, {"shape", {1, 3, h, w}},
             {"data", values}};
  return json({{"id", "req-7"}, {"inputs", {in}}}).dump();
}

// A binary-extension body: JSON header then the values' bytes; *header_len gets its size.
std::string infer_binary(const std::vector<float>& values, int h, int w, bool binary_out,
                         size_t* header_len) {
  json in = {{"name", "INPUT__0"}, {"datatype", "FP32"}, {"shape", {1, 3, h, w}},
             {"parameters", {{"binary_data_size", values.size() * sizeof(float)}}}};
  json j = {{"inputs", {in}}};
  if (binary_out) j["outputs"] = {{{"name", "OUTPUT__0"}, {"parameters", {{"binary_data", true}}}}};
  std::string body = j.dump();
  *header_len = body.size();
  body.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return body;
}

size_t argmax(const std::vector<float>& v) {
  return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace

TEST_CASE("v2 health and model metadata", "[server][v2]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  CHECK(c.get("/v2/health/live").status == 200);
  CHECK(c.get("/v2/health/ready").status == 200);
  CHECK(json::parse(c.get("/v2").body)["extensions"][0] == "binary_tensor_data");
  REQUIRE(c.post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);

  auto meta = c.get("/v2/models/cnn");
  INFO(meta.body);
  REQUIRE(meta.status == 200);
  json m = json::parse(meta.body);
  CHECK(m["name"] == "cnn");
  CHECK(m["inputs"][0]["name"] == "INPUT__0");
  CHECK(m["inputs"][0]["datatype"] == "FP32");
  CHECK(m["inputs"][0]["shape"] == json({-1, 3, 32, 32}));
  CHECK(m["outputs"][0]["name"] == "OUTPUT__0");
  CHECK(m["outputs"][0]["shape"] == json({-1, 10}));
  CHECK(c.get("/v2/models/cnn/versions/1").status == 200);

  CHECK(c.get("/v2/models/cnn/ready").status == 200);
  CHECK(json::parse(c.get("/v2/models/cnn/ready").body)["ready"] == true);
  auto unknown = c.get("/v2/models/nope/ready");
  CHECK(unknown.status == 404);
  CHECK(json::parse(unknown.body)["error"].get<std::string>().find("nope") != std::string::npos);
  CHECK(c.get("/v2/models/nope").status == 404);
  CHECK(c.get("/v2/models/cnn/versions/2").status == 404);
  CHECK(c.get("/v2/models/.bad").status == 400);
  CHECK(c.get("/v2/models/cnn/infer").status == 405);
}

// perf_analyzer and tritonclient read the model configuration before they send: Triton's
// config form lists the tensors without the batch dimension and names types TYPE_*.
TEST_CASE("v2 model configuration in Triton's form", "[server][v2]") {
  TempDir store;
  TestServer ts(store.path.string(), [](runtime::EngineOptions&, server::ServerOptions& s) {
    s.v2_max_batch = 16;
  });
  HttpClient c(ts.port());
  REQUIRE(c.post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);
  auto res = c.get("/v2/models/cnn/config");
  INFO(res.body);
  REQUIRE(res.status == 200);
  json cfg = json::parse(res.body);
  CHECK(cfg["name"] == "cnn");
  CHECK(cfg["platform"] == "pytorch_libtorch");
  CHECK(cfg["max_batch_size"] == 16);
  CHECK(cfg["input"][0]["name"] == "INPUT__0");
  CHECK(cfg["input"][0]["data_type"] == "TYPE_FP32");
  CHECK(cfg["input"][0]["dims"] == json({3, 32, 32}));
  CHECK(cfg["output"][0]["name"] == "OUTPUT__0");
  CHECK(cfg["output"][0]["dims"] == json({10}));
  CHECK(c.get("/v2/models/cnn/versions/1/config").status == 200);
  CHECK(c.get("/v2/models/nope/config").status == 404);
}

TEST_CASE("v2 JSON infer gives the image path's answer for the same tensor", "[server][v2]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  REQUIRE(c.post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);
  json model = json::parse(c.get("/models/cnn").body);
  runtime::Preprocess pp = server::preprocess_from_json(model["preprocess"]);

  for (const char* image : {"gradient.jpg", "disk.png", "noise_portrait.jpg"}) {
    INFO(image);
    std::string bytes = read_file(image_file(image));
    auto cls = c.request("POST", "/classify/cnn?top_k=1", bytes, "image/jpeg");
    REQUIRE(cls.status == 200);
    json top = json::parse(cls.body)["top"][0];

    std::vector<float> chw = runtime::preprocess_image(bytes, pp, true).chw;
    auto res = c.post_json("/v2/models/cnn/infer", infer_json(chw, 32, 32));
    INFO(res.body);
    REQUIRE(res.status == 200);
    json r = json::parse(res.body);
    CHECK(r["model_name"] == "cnn");
    CHECK(r["id"] == "req-7");
    json out = r["outputs"][0];
    CHECK(out["name"] == "OUTPUT__0");
    CHECK(out["datatype"] == "FP32");
    CHECK(out["shape"] == json({1, 10}));
    auto logits = out["data"].get<std::vector<float>>();
    REQUIRE(logits.size() == 10);
    for (float v : logits) CHECK(std::isfinite(v));
    size_t best = argmax(logits);
    CHECK(top["label"] == "tiny_cnn_class_" + std::to_string(best));
    double sum = 0;
    for (float v : logits) sum += std::exp(v - logits[best]);
    CHECK(top["score"].get<double>() == Approx(1.0 / sum).epsilon(1e-4));
  }
}

TEST_CASE("v2 binary tensors round trip", "[server][v2]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  REQUIRE(c.post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);
  std::vector<float> chw(3 * 32 * 32);
  for (size_t i = 0; i < chw.size(); ++i) chw[i] = static_cast<float>(i % 97) / 97.0f - 0.5f;
  auto as_json = c.post_json("/v2/models/cnn/infer", infer_json(chw, 32, 32));
  REQUIRE(as_json.status == 200);
  auto expected = json::parse(as_json.body)["outputs"][0]["data"].get<std::vector<float>>();

  HttpClient bin(ts.port());
  size_t header_len = 0;
  std::string body = infer_binary(chw, 32, 32, true, &header_len);
  bin.set_header("Inference-Header-Content-Length", std::to_string(header_len));
  auto res = bin.request("POST", "/v2/models/cnn/infer", body, "application/octet-stream");
  INFO(res.body.substr(0, 300));
  REQUIRE(res.status == 200);
  REQUIRE(res.headers.count("inference-header-content-length") == 1);
  size_t head = std::stoul(res.headers["inference-header-content-length"]);
  REQUIRE(head + 10 * sizeof(float) == res.body.size());
  json out = json::parse(res.body.substr(0, head))["outputs"][0];
  CHECK(out["parameters"]["binary_data_size"] == 40);
  CHECK_FALSE(out.contains("data"));
  std::vector<float> got(10);
  std::memcpy(got.data(), res.body.data() + head, 40);
  for (size_t i = 0; i < 10; ++i) CHECK(got[i] == Approx(expected[i]).margin(1e-5));

  // Binary input, JSON output.
  body = infer_binary(chw, 32, 32, false, &header_len);
  bin.set_header("Inference-Header-Content-Length", std::to_string(header_len));
  res = bin.request("POST", "/v2/models/cnn/infer", body, "application/octet-stream");
  REQUIRE(res.status == 200);
  auto data = json::parse(res.body)["outputs"][0]["data"].get<std::vector<float>>();
  REQUIRE(data.size() == 10);
  CHECK(argmax(data) == argmax(expected));
}

TEST_CASE("v2 infer refuses malformed tensors with 400", "[server][v2][errors]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  REQUIRE(c.post_json("/register", register_json("cnn", "tiny_cnn")).status == 201);
  std::vector<float> chw(3 * 32 * 32, 0.25f);
  json good = json::parse(infer_json(chw, 32, 32));
  auto with = [&](const std::function<void(json&)>& edit) {
    json j = good;
    edit(j);
    return c.post_json("/v2/models/cnn/infer", j.dump());
  };
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    const char* message;
  };
  std::vector<Case> cases = {
      {"INT32", [](json& j) { j["inputs"][0]["datatype"] = "INT32"; }, "datatype"},
      {"shape", [](json& j) { j["inputs"][0]["shape"] = {1, 3, 16, 16}; }, "shape"},
      {"short data", [](json& j) { j["inputs"][0]["data"].erase(0); }, "values"},
      {"long data", [](json& j) { j["inputs"][0]["data"].push_back(1); }, "more values"},
      {"string value", [](json& j) { j["inputs"][0]["data"][5] = "x"; }, "numbers"},
      {"input name", [](json& j) { j["inputs"][0]["name"] = "x"; }, "unknown input"},
      {"no inputs", [](json& j) { j.erase("inputs"); }, "inputs"},
      {"output name", [](json& j) { j["outputs"] = {{{"name", "y"}}}; }, "unknown output"},
      {"binary size", [](json& j) { j["inputs"][0]["parameters"] = {{"binary_data_size", 7}}; },
       "binary_data_size"},
  };
  for (const auto& k : cases) {
    auto res = with(k.edit);
    INFO(k.what << ": " << res.body);
    CHECK(res.status == 400);
    CHECK_THAT(json::parse(res.body)["error"].get<std::string>(), Catch::Contains(k.message));
  }
  CHECK(c.post_json("/v2/models/cnn/infer", "{not json").status == 400);
  CHECK(c.post_json("/v2/models/nope/infer", good.dump()).status == 404);

  HttpClient bin(ts.port());
  bin.set_header("Inference-Header-Content-Length", "999999");
  auto res = bin.request("POST", "/v2/models/cnn/infer", good.dump(), "application/json");
  CHECK(res.status == 400);
  CHECK_THAT(res.body, Catch::Contains("Inference-Header-Content-Length"));
  // Binary bytes that no input claims.
  size_t header_len = 0;
  std::string body = infer_binary(chw, 32, 32, false, &header_len) + "xx";
  bin.set_header("Inference-Header-Content-Length", std::to_string(header_len));
  res = bin.request("POST", "/v2/models/cnn/infer", body, "application/octet-stream");
  CHECK(res.status == 400);
  CHECK(c.connections_opened() == 1);  // errors keep the connection
}
