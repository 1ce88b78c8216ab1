// The infer response is written without building a json document; it must be the very bytes
// json::dump gives for that document (the form it had before), for any values and names.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/server/v2_protocol.h"

using namespace servelab::server;
using nlohmann::json;

namespace {

// The response as a json document, dumped: the reference.
std::string reference_head(const std::string& model, const std::string& id,
                           const TensorSpec& output, const std::vector<float>& values,
                           bool binary) {
  json out = {{"name", output.name}, {"datatype", output.datatype}, {"shape", output.shape}};
  if (binary)
    out["parameters"] = {{"binary_data_size", values.size() * sizeof(float)}};
  else
    out["data"] = values;
  json j = {{"model_name", model}, {"model_version", "1"}, {"outputs", json::array({out})}};
  if (!id.empty()) j["id"] = id;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void check_same(const std::string& model, const std::string& id, const std::vector<float>& v) {
  const TensorSpec out = {"OUTPUT__0", "FP32", {1, static_cast<int64_t>(v.size())}};
  CHECK(v2_infer_response(model, id, out, v, false).body == reference_head(model, id, out, v, false));
  HttpResponse b = v2_infer_response(model, id, out, v, true);
  const std::string head = reference_head(model, id, out, v, true);
  REQUIRE(b.headers.size() == 1);
  CHECK(b.headers[0].second == std::to_string(head.size()));
  CHECK(b.body.substr(0, head.size()) == head);
  CHECK(b.body.size() == head.size() + v.size() * sizeof(float));
}

}  // namespace

TEST_CASE("v2 infer response: the bytes json::dump writes, for any float", "[server][v2]") {
  const float inf = std::numeric_limits<float>::infinity();
  check_same("m", "", {0.0f, -0.0f, 1.0f, -1.0f, 0.1f, 1e-7f, 3.4028235e38f, 1.4e-45f, 1e16f,
                       123456.0f, 1.17549435e-38f, std::nanf(""), inf, -inf});
  check_same("noop", "req-1", {});
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  std::vector<float> v;
  for (int i = 0; i < 2000; ++i) {  // every bit pattern class: normals, subnormals, NaNs
    uint32_t u = bits(rng);
    float f;
    std::memcpy(&f, &u, sizeof f);
    v.push_back(f);
  }
  check_same("m", "x", v);
  std::normal_distribution<float> logits(0.0f, 3.0f);
  v.clear();
  for (int i = 0; i < 1000; ++i) v.push_back(logits(rng));
  check_same("m", "x", v);
}

TEST_CASE("v2 infer response escapes names and ids as json::dump does", "[server][v2]") {
  check_same("a\"b\\c", "tab\there\nnew", {1.5f});
  check_same("m", "caf\xc3\xa9 \xe2\x82\xac", {1.5f});  // UTF-8 kept as is
  check_same("m", "bad \xff\xfe utf8", {1.5f});          // replaced, as dump(replace) does
  check_same("m", std::string("nul\0in", 6), {1.5f});
}
