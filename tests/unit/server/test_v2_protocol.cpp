// The KServe v2 request parser and response forms (engine/server/v2_protocol.h), no server.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/server/v2_protocol.h"

using namespace servelab::server;
using nlohmann::json;

namespace {

const TensorSpec kInput = {"INPUT__0", "FP32", {1, 3, 2, 2}};

json input_json(json data) {
  return {{"name", "INPUT__0"}, {"datatype", "FP32"}, {"shape", {1, 3, 2, 2}},
          {"data", std::move(data)}};
}

V2InferRequest parse(const json& j) {
  return parse_v2_infer(j.dump(), nullptr, kInput, "OUTPUT__0");
}

std::string error_of(const std::string& body, const std::string* header = nullptr) {
  try {
    parse_v2_infer(body, header, kInput, "OUTPUT__0");
  } catch (const HttpError& e) {
    CHECK(e.status == 400);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("v2 parser reads flat and nested JSON data", "[server][v2]") {
  std::vector<float> flat = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  V2InferRequest r = parse({{"id", "a"}, {"inputs", {input_json(flat)}}});
  CHECK(r.id == "a");
  CHECK(r.input == flat);
  CHECK_FALSE(r.binary_output);
  json nested = {{{{0, 1}, {2, 3}}, {{4, 5}, {6, 7}}, {{8, 9}, {10, 11}}}};
  CHECK(parse({{"inputs", {input_json(nested)}}}).input == flat);
  json j = {{"inputs", {input_json(flat)}}, {"parameters", {{"binary_data_output", true}}}};
  CHECK(parse(j).binary_output);
  j = {{"inputs", {input_json(flat)}},
       {"outputs", {{{"name", "OUTPUT__0"}, {"parameters", {{"binary_data", true}}}}}}};
  CHECK(parse(j).binary_output);
}

TEST_CASE("v2 parser reads binary tensors after the JSON header", "[server][v2]") {
  std::vector<float> values = {1.5f, -2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12.25f};
  json in = {{"name", "INPUT__0"}, {"datatype", "FP32"}, {"shape", {1, 3, 2, 2}},
             {"parameters", {{"binary_data_size", 48}}}};
  std::string head = json({{"inputs", {in}}}).dump();
  std::string body = head + std::string(reinterpret_cast<const char*>(values.data()), 48);
  std::string len = std::to_string(head.size());
  CHECK(parse_v2_infer(body, &len, kInput, "OUTPUT__0").input == values);
  CHECK_THAT(error_of(body.substr(0, body.size() - 1), &len), Catch::Contains("47 bytes"));
  CHECK_THAT(error_of(body + "z", &len), Catch::Contains("49 bytes"));
  std::string huge = "18446744073709551615";
  CHECK_THAT(error_of(body, &huge), Catch::Contains("Inference-Header-Content-Length"));
  std::string junk = "12a";
  CHECK_THAT(error_of(body, &junk), Catch::Contains("byte count"));
  std::string small = "3";
  CHECK_THAT(error_of(body, &small), Catch::Contains("not valid JSON"));
}

TEST_CASE("v2 parser refuses what the model cannot take", "[server][v2]") {
  std::vector<float> flat(12, 1.0f);
  auto err = [&](const std::function<void(json&)>& edit) {
    json j = {{"inputs", {input_json(flat)}}};
    edit(j);
    return error_of(j.dump());
  };
  CHECK_THAT(err([](json& j) { j["inputs"][0]["datatype"] = "FP16"; }), Catch::Contains("FP16"));
  CHECK_THAT(err([](json& j) { j["inputs"][0]["shape"] = {1, 3, 2}; }),
             Catch::Contains("[1, 3, 2]"));
  CHECK_THAT(err([](json& j) { j["inputs"][0]["shape"] = {-1, 3, 2, 2}; }),
             Catch::Contains("shape"));
  CHECK_THAT(err([](json& j) { j["inputs"][0]["data"] = json::array(); }),
             Catch::Contains("has 0 values"));
  CHECK_THAT(err([](json& j) { j["inputs"][0]["data"][0] = 1e300; }), Catch::Contains("FP32"));
  CHECK_THAT(err([](json& j) { j["inputs"][0]["data"][0] = true; }), Catch::Contains("numbers"));
  CHECK_THAT(err([](json& j) { j["inputs"].push_back(j["inputs"][0]); }),
             Catch::Contains("one tensor"));
  CHECK_THAT(err([](json& j) { j["id"] = 3; }), Catch::Contains("\"id\""));
  CHECK_THAT(err([](json& j) {
               j["outputs"] = {{{"name", "OUTPUT__0"}, {"parameters", {{"classification", 3}}}}};
             }),
             Catch::Contains("classification"));
  json deep = 1.0;
  for (int i = 0; i < 20; ++i) deep = json::array({deep});
  CHECK_THAT(err([&](json& j) { j["inputs"][0]["data"] = deep; }), Catch::Contains("nested"));
  CHECK_THAT(error_of("[1, 2]"), Catch::Contains("object"));
  CHECK_THAT(error_of(""), Catch::Contains("not valid JSON"));
}

TEST_CASE("v2 element counts refuse negative and overflowing shapes", "[server][v2]") {
  CHECK(v2_element_count({1, 3, 224, 224}, 1 << 28) == 150528);
  CHECK(v2_element_count({}, 10) == 1);
  CHECK(v2_element_count({0, 5}, 10) == 0);
  CHECK(v2_element_count({-1, 3}, 10) == -1);
  CHECK(v2_element_count({int64_t{1} << 40, int64_t{1} << 40}, INT64_MAX) == -1);
  CHECK(v2_element_count({11}, 10) == -1);
}

TEST_CASE("v2 responses in JSON and binary form", "[server][v2]") {
  TensorSpec out = {"OUTPUT__0", "FP32", {1, 2}};
  HttpResponse r = v2_infer_response("m", "x", out, {0.5f, -1.0f}, false);
  json j = json::parse(r.body);
  CHECK(j["model_name"] == "m");
  CHECK(j["id"] == "x");
  CHECK(j["outputs"][0]["data"] == json({0.5, -1.0}));
  CHECK(r.content_type == "application/json");

  r = v2_infer_response("m", "", out, {0.5f, -1.0f}, true);
  REQUIRE(r.headers.size() == 1);
  CHECK(r.headers[0].first == "Inference-Header-Content-Length");
  size_t head = std::stoul(r.headers[0].second);
  REQUIRE(head + 8 == r.body.size());
  j = json::parse(r.body.substr(0, head));
  CHECK_FALSE(j.contains("id"));
  CHECK(j["outputs"][0]["parameters"]["binary_data_size"] == 8);
  float back[2];
  std::memcpy(back, r.body.data() + head, 8);
  CHECK(back[0] == 0.5f);
  CHECK(back[1] == -1.0f);

  j = json::parse(v2_metadata_response("m", kInput, v2_output_spec(0)).body);
  CHECK(j["inputs"][0]["shape"] == json({1, 3, 2, 2}));
  CHECK(j["outputs"][0]["shape"] == json({1, -1}));
}
