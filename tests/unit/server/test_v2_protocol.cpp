// The KServe v2 request parser and response forms (engine/server/v2_protocol.h), no server.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/server/v2_protocol.h"

using namespace servelab::server;
using nlohmann::json;

namespace {

const TensorSpec kInput = {"INPUT__0", "FP32", {-1, 3, 2, 2}};
const TensorSpec kOutput = {"OUTPUT__0", "FP32", {-1, 4}};
constexpr uint32_t kMaxBatch = 8;

json input_json(json data) {
  return {{"name", "INPUT__0"}, {"datatype", "FP32"}, {"shape", {1, 3, 2, 2}},
          {"data", std::move(data)}};
}

V2InferRequest parse(const json& j) {
  return parse_v2_infer(j.dump(), nullptr, kInput, kOutput, kMaxBatch);
}

std::string error_of(const std::string& body, const std::string* header = nullptr,
                     int status = 400) {
  try {
    parse_v2_infer(body, header, kInput, kOutput, kMaxBatch);
  } catch (const HttpError& e) {
    CHECK(e.status == status);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("v2 parser reads flat and nested JSON data", "[server][v2]") {
  std::vector<float> flat = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  V2InferRequest r = parse({{"id", "a"}, {"inputs", {input_json(flat)}}});
  CHECK(r.id == "a");
  REQUIRE(r.items.size() == 1);
  CHECK(r.items[0] == flat);
  CHECK_FALSE(r.binary_output);
  json nested = {{{{0, 1}, {2, 3}}, {{4, 5}, {6, 7}}, {{8, 9}, {10, 11}}}};
  CHECK(parse({{"inputs", {input_json(nested)}}}).items[0] == flat);
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
  auto items = parse_v2_infer(body, &len, kInput, kOutput, kMaxBatch).items;
  REQUIRE(items.size() == 1);
  CHECK(items[0] == values);
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
  CHECK_THAT(err([](json& j) { j["inputs"][0]["shape"] = {0, 3, 2, 2}; }),
             Catch::Contains("at least 1"));
  json deep = 1.0;
  for (int i = 0; i < 20; ++i) deep = json::array({deep});
  CHECK_THAT(err([&](json& j) { j["inputs"][0]["data"] = deep; }), Catch::Contains("nested"));
  CHECK_THAT(error_of("[1, 2]"), Catch::Contains("object"));
  CHECK_THAT(error_of(""), Catch::Contains("not valid JSON"));
}

TEST_CASE("v2 parser streams the data and bounds everything else", "[server][v2]") {
  std::vector<float> flat = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  // "data" before "shape": read all the same.
  std::string body = R"({"inputs": [{"data": [0,1,2,3,4,5,6,7,8,9,10,11], "name": "INPUT__0",)"
                     R"( "datatype": "FP32", "shape": [1, 3, 2, 2]}]})";
  CHECK(parse_v2_infer(body, nullptr, kInput, kOutput, kMaxBatch).items[0] == flat);
  // Keys beside the data keep their meaning.
  json j = {{"id", "x"}, {"inputs", {input_json(flat)}}, {"outputs", {{{"name", "OUTPUT__0"}}}}};
  CHECK(parse(j).id == "x");
  // Refused at the first value past the shape, whatever follows.
  std::string many = R"({"inputs": [{"name": "INPUT__0", "datatype": "FP32", "shape": [1, 3, 2, 2], "data": [0)";
  for (int i = 0; i < 100000; ++i) many += ",0";
  CHECK_THAT(error_of(many + "]}]}"), Catch::Contains("more values than its shape holds"));
  CHECK_THAT(error_of(many), Catch::Contains("more values than its shape holds"));
  // Numbers outside the data build no tree: more than 4096 values there are refused.
  std::string pad = json({{"inputs", {input_json(flat)}}}).dump();
  pad.pop_back();
  pad += R"(, "pad": [0)";
  for (int i = 0; i < 5000; ++i) pad += ",0";
  CHECK_THAT(error_of(pad + "]}"), Catch::Contains("4096 JSON values"));
  CHECK_THAT(error_of(pad), Catch::Contains("4096 JSON values"));
  // Data twice, data not an array, an id longer than 4 KiB.
  std::string twice = json({{"inputs", {input_json(flat)}}}).dump();
  twice.insert(twice.find("\"name\""), R"("data": [1], )");
  CHECK_THAT(error_of(twice), Catch::Contains("twice"));
  CHECK_THAT(error_of(json({{"inputs", {input_json(5)}}}).dump()), Catch::Contains("needs \"data\""));
  CHECK_THAT(error_of(json({{"id", std::string(5000, 'i')}, {"inputs", {input_json(flat)}}}).dump()),
             Catch::Contains("4096 bytes"));
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
  CHECK(j["inputs"][0]["shape"] == json({-1, 3, 2, 2}));
  CHECK(j["outputs"][0]["shape"] == json({-1, -1}));
}

TEST_CASE("v2 parser cuts a batch into items in request order", "[server][v2][batch]") {
  std::vector<float> flat(36);
  for (size_t i = 0; i < flat.size(); ++i) flat[i] = static_cast<float>(i) * 0.5f;
  json in = input_json(flat);
  in["shape"] = {3, 3, 2, 2};
  V2InferRequest r = parse({{"inputs", {in}}});
  REQUIRE(r.items.size() == 3);
  for (size_t k = 0; k < 3; ++k)
    CHECK(r.items[k] == std::vector<float>(flat.begin() + 12 * k, flat.begin() + 12 * (k + 1)));

  // The same batch as binary data.
  in.erase("data");
  in["parameters"] = {{"binary_data_size", 36 * 4}};
  std::string head = json({{"inputs", {in}}}).dump();
  std::string body = head + std::string(reinterpret_cast<const char*>(flat.data()), 36 * 4);
  std::string len = std::to_string(head.size());
  auto items = parse_v2_infer(body, &len, kInput, kOutput, kMaxBatch).items;
  REQUIRE(items.size() == 3);
  CHECK(items[2] == std::vector<float>(flat.begin() + 24, flat.end()));
}

TEST_CASE("v2 parser bounds the batch size before reading data", "[server][v2][batch]") {
  auto with_batch = [](int64_t n, json data) {
    json in = input_json(std::move(data));
    in["shape"] = {n, 3, 2, 2};
    return json({{"inputs", {in}}}).dump();
  };
  std::string e = error_of(with_batch(9, json::array()), nullptr, 413);
  CHECK_THAT(e, Catch::Contains("batch size 9"));
  CHECK_THAT(e, Catch::Contains("limit of 8"));
  CHECK_THAT(error_of(with_batch(int64_t{1} << 40, json::array()), nullptr, 413),
             Catch::Contains("limit of 8"));
  // Within the limit: the data must fill the whole batch.
  CHECK_THAT(error_of(with_batch(2, std::vector<float>(12, 1.0f))),
             Catch::Contains("has 12 values; its shape [2, 3, 2, 2] holds 24"));
  CHECK_THAT(error_of(with_batch(2, std::vector<float>(25, 1.0f))),
             Catch::Contains("more values"));
  CHECK(parse(json::parse(with_batch(8, std::vector<float>(96, 1.0f)))).items.size() == 8);
}

TEST_CASE("v2 parser reads the classification parameter within the classes", "[server][v2]") {
  auto with_k = [](json k) {
    json j = {{"inputs", {input_json(std::vector<float>(12, 1.0f))}},
              {"outputs", {{{"name", "OUTPUT__0"}, {"parameters", {{"classification", k}}}}}}};
    return j;
  };
  CHECK(parse(with_k(2)).classification == 2);
  CHECK(parse(with_k(4)).classification == 4);
  CHECK(parse({{"inputs", {input_json(std::vector<float>(12, 1.0f))}}}).classification == 0);
  for (json k : {json(0), json(5), json(-1), json(2.5), json("2"), json(true)}) {
    INFO(k.dump());
    std::string e = error_of(with_k(k).dump());
    CHECK_THAT(e, Catch::Contains("classification"));
    CHECK_THAT(e, Catch::Contains("1..4"));
  }
  // Classes unknown (profiled executor): bounded all the same.
  json j = with_k(int64_t{1} << 21);
  TensorSpec unknown = {"OUTPUT__0", "FP32", {-1, -1}};
  CHECK_THROWS_AS(parse_v2_infer(j.dump(), nullptr, kInput, unknown, kMaxBatch), HttpError);
}

TEST_CASE("v2 top classes: highest first as value:index[:label]", "[server][v2]") {
  std::vector<float> row = {1, 5, 10, 4};
  CHECK(v2_top_classes(row, 2, {}) == std::vector<std::string>{"10:2", "5:1"});
  CHECK(v2_top_classes(row, 4, {}) == std::vector<std::string>{"10:2", "5:1", "4:3", "1:0"});
  CHECK(v2_top_classes(row, 1, {"a", "b", "c", "d"}) == std::vector<std::string>{"10:2:c"});
  // A label list shorter than the row names only the indices it has.
  CHECK(v2_top_classes({0, 3}, 2, {"x"}) == std::vector<std::string>{"3:1", "0:0:x"});
  // Ties keep the lower index first; NaN goes last.
  CHECK(v2_top_classes({2, NAN, 2, -1}, 4, {}) ==
        std::vector<std::string>{"2:0", "2:2", "-1:3", "nan:1"});
  // Scores read back as the same float.
  std::vector<float> odd = {0.1f, -3.2e-7f, 123456.79f};
  for (const std::string& s : v2_top_classes(odd, 3, {})) {
    const size_t colon = s.find(':');
    const float back = std::stof(s.substr(0, colon));
    CHECK(back == odd[std::stoul(s.substr(colon + 1))]);
  }
}

TEST_CASE("v2 BYTES responses in JSON and binary form", "[server][v2]") {
  TensorSpec out = {"OUTPUT__0", "BYTES", {2, 1}};
  std::vector<std::string> strings = {"10:2", "0.5:13:cat"};
  HttpResponse r = v2_bytes_response("m", "x", out, strings, false);
  json j = json::parse(r.body);
  CHECK(j["outputs"][0]["datatype"] == "BYTES");
  CHECK(j["outputs"][0]["shape"] == json({2, 1}));
  CHECK(j["outputs"][0]["data"] == json(strings));

  r = v2_bytes_response("m", "x", out, strings, true);
  REQUIRE(r.headers.size() == 1);
  size_t head = std::stoul(r.headers[0].second);
  const size_t bytes = 4 + 4 + 4 + 10;
  REQUIRE(head + bytes == r.body.size());
  CHECK(json::parse(r.body.substr(0, head))["outputs"][0]["parameters"]["binary_data_size"] ==
        bytes);
  std::string tail = r.body.substr(head);
  CHECK(tail == std::string("\x04\0\0\0", 4) + "10:2" + std::string("\x0a\0\0\0", 4) +
                    "0.5:13:cat");
}

TEST_CASE("v2 parser answers a repeated binary header as a fresh parse would",
          "[server][v2][batch]") {
  json in = {{"name", "INPUT__0"}, {"datatype", "FP32"}, {"shape", {2, 3, 2, 2}},
             {"parameters", {{"binary_data_size", 96}}}};
  json j = {{"id", "r1"}, {"inputs", {in}}, {"parameters", {{"slo_ms", 25}}},
            {"outputs", {{{"name", "OUTPUT__0"}, {"parameters", {{"classification", 2}}}}}}};
  const std::string head = j.dump(), len = std::to_string(head.size());
  auto body_with = [&](float first) {
    std::vector<float> v(24);
    for (size_t i = 0; i < v.size(); ++i) v[i] = first + static_cast<float>(i);
    return head + std::string(reinterpret_cast<const char*>(v.data()), 96);
  };
  for (float first : {0.0f, 100.0f, -7.5f}) {  // the first parses, the others repeat it
    V2InferRequest r = parse_v2_infer(body_with(first), &len, kInput, kOutput, kMaxBatch);
    CHECK(r.id == "r1");
    CHECK(r.slo_ms == 25.0);
    CHECK(r.classification == 2);
    CHECK_FALSE(r.binary_output);
    REQUIRE(r.items.size() == 2);
    CHECK(r.items[0][0] == first);
    CHECK(r.items[1][11] == first + 23);
  }
  // The same bytes against other limits or specs are judged afresh.
  const std::string body = body_with(1);
  auto status_of = [&](const TensorSpec& input, const TensorSpec& output, uint32_t max_batch) {
    try {
      parse_v2_infer(body, &len, input, output, max_batch);
    } catch (const HttpError& e) {
      return e.status;
    }
    return 200;
  };
  CHECK(status_of(kInput, kOutput, 1) == 413);
  CHECK(status_of({"INPUT__0", "FP32", {-1, 3, 2, 1}}, kOutput, kMaxBatch) == 400);
  CHECK(status_of({"INPUT__1", "FP32", {-1, 3, 2, 2}}, kOutput, kMaxBatch) == 400);
  CHECK(status_of(kInput, {"OUTPUT__0", "FP32", {-1, 1}}, kMaxBatch) == 400);
  CHECK(status_of(kInput, kOutput, kMaxBatch) == 200);
  CHECK(error_of(body.substr(0, body.size() - 4), &len).find("92 bytes") != std::string::npos);
}
