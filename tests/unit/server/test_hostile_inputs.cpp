// Hostile inputs to the HTTP layer that once got a wrong or unhelpful answer: answers the
// transport gives itself are counted by status, an encoded slash in a path is named, v2
// "parameters" that are not an object are refused, a number out of a double's range is named
// by its key, and a bad value is never echoed whole.
#include <catch2/catch.hpp>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "engine/server/group_definition.h"
#include "engine/server/http_metrics.h"
#include "engine/server/http_transport.h"
#include "engine/server/register_request.h"
#include "engine/server/route_table.h"
#include "engine/server/v2_protocol.h"
#include "tests/integration/server/http_client.h"

using namespace servelab::server;
using servelab::testing::send_raw;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

std::string status_line(const std::string& raw) { return raw.substr(0, raw.find("\r\n")); }

// The status and message of what `f` threw as an HttpError ("" when it threw nothing).
template <class F>
std::pair<int, std::string> http_error_of(F&& f) {
  try {
    f();
  } catch (const HttpError& e) {
    return {e.status, e.what()};
  }
  return {0, ""};
}

}  // namespace

TEST_CASE("every answer the transport gives itself is reported by status", "[server][hostile]") {
  std::mutex mu;
  std::map<int, int> refused;
  TransportOptions o;
  o.max_body_bytes = 1024;
  o.refused = [&](int status) {
    std::lock_guard<std::mutex> lock(mu);
    ++refused[status];
  };
  HttpTransport t(o, [](HttpRequest, Reply reply) { reply(json_response(200, "{}")); });
  t.start();
  const uint16_t port = t.port();
  CHECK(status_line(send_raw(port, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n")) ==
        "HTTP/1.1 413 Payload Too Large");
  CHECK(status_line(send_raw(port, "GET /x HTTP/1.1\r\n\r\n")) == "HTTP/1.1 400 Bad Request");
  CHECK(status_line(send_raw(port, "GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n")) ==
        "HTTP/1.1 414 URI Too Long");
  CHECK(status_line(send_raw(port, "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n")) ==
        "HTTP/1.1 501 Not Implemented");
  CHECK(status_line(send_raw(port, "GET /x HTTP/1.1\r\nHost: x\r\nX-Big: " +
                                       std::string(70000, 'b') + "\r\n\r\n"))
            .find(" 431 ") != std::string::npos);
  // The limit is on the whole header, not on one field: 20 fields of 4,000 bytes (80 KB) are
  // over it as one field of 70 KB is.
  std::string many_fields = "GET /x HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 20; ++i)
    many_fields += "X-Field-" + std::to_string(i) + ": " + std::string(4000, 'c') + "\r\n";
  CHECK(status_line(send_raw(port, many_fields + "\r\n")).find(" 431 ") != std::string::npos);
  CHECK(status_line(send_raw(port, "GARBAGE\x01 / HTTP/1.1\r\n\r\n")) == "HTTP/1.1 400 Bad Request");
  t.stop();
  std::lock_guard<std::mutex> lock(mu);
  CHECK(refused == std::map<int, int>{{400, 2}, {413, 1}, {414, 1}, {431, 2}, {501, 1}});

  HttpMetrics m;
  m.refused(413);
  CHECK_THAT(m.text(), Contains("servelab_http_requests_total{route=\"transport\",code=\"413\"} 1") &&
                           Contains("servelab_http_requests_in_flight 0"));
}

TEST_CASE("an encoded slash in a path is a 400 that says so, not a 405", "[server][hostile]") {
  RouteTable r;
  r.add("GET", "/v2/models/{name}", [](HttpRequest&, const PathParams&, Reply reply) {
    reply(json_response(200, "{}"));
  });
  r.add("POST", "/v2/models/{name}/infer", [](HttpRequest&, const PathParams&, Reply reply) {
    reply(json_response(200, "{}"));
  });
  HttpRequest req;
  req.method = "POST";
  req.target = req.path = "/v2/models/x%2finfer";
  HttpResponse got;
  r.dispatch(req, [&](HttpResponse res) { got = std::move(res); });
  CHECK(got.status == 400);
  CHECK_THAT(got.body, Contains("encoded slash"));
}

TEST_CASE("v2 parameters that are not an object are refused", "[server][hostile]") {
  const TensorSpec in = {"INPUT__0", "FP32", {-1, 3, 2, 2}};
  const TensorSpec out = {"OUTPUT__0", "FP32", {-1, 4}};
  json input = {{"name", "INPUT__0"}, {"datatype", "FP32"}, {"shape", {1, 3, 2, 2}},
                {"data", std::vector<float>(12, 0.5f)}};
  auto parse = [&](const json& body) { parse_v2_infer(body.dump(), nullptr, in, out, 8); };
  json bad_input = input;
  bad_input["parameters"] = 5;
  auto [status, message] = http_error_of([&] { parse({{"inputs", {bad_input}}}); });
  CHECK(status == 400);
  CHECK_THAT(message, Contains("\"parameters\" must be an object"));
  json outputs = {{{"name", "OUTPUT__0"}, {"parameters", 5}}};
  CHECK(http_error_of([&] { parse({{"inputs", {input}}, {"outputs", outputs}}); }).first == 400);
  CHECK(http_error_of([&] { parse({{"inputs", {input}}, {"parameters", 5}}); }).first == 400);
  CHECK(http_error_of([&] { parse({{"inputs", {input}}}); }).first == 0);
}

TEST_CASE("a group accuracy beyond a double names its key", "[server][hostile]") {
  auto [status, message] = http_error_of([] {
    parse_group_definition(R"({"name": "g", "members": ["a", "b"], "accuracy": {"a": 0.5, "b": 1e400}})");
  });
  CHECK(status == 400);
  CHECK_THAT(message, Contains("'accuracy.b' is out of range") && Contains("1e400"));
  CHECK_THAT(http_error_of([] { parse_group_definition(R"({"name": "g", "members": [)"); }).second,
             Contains("not valid JSON at byte") && Contains("members"));
}

TEST_CASE("a bad value is echoed cut, never whole", "[server][hostile]") {
  HttpRequest req;
  req.method = "POST";
  req.path = "/register";
  req.headers = {{"content-type", "application/json"}};
  req.body = json{{"name", "m"}, {"path", "/x.pt"}, {std::string(30u << 20, 'k'), 1}}.dump();
  auto [status, message] = http_error_of([&] { parse_register_request(req); });
  CHECK(status == 400);
  REQUIRE(message.size() < 1000);  // first: a failure must not print 30 MB
  CHECK_THAT(message, Contains("unknown field") && Contains(std::to_string(30u << 20) + " bytes"));

  const HttpResponse r = error_response(400, "value '" + std::string(1u << 20, 'v') + "'");
  REQUIRE(r.body.size() < 2 * kMaxErrorBytes);
  CHECK_THAT(r.body, Contains("message cut"));
}
