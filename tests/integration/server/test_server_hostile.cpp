// Hostile round two over loopback (issue 51): answers the HTTP layer gives are counted in
// /metrics by status; X-SLO-Ms is decimal only; a name in use answers 409 with what to do;
// an encoded slash in a v2 path is a 400 that names it.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/integration/server/server_fixture.h"
#include "tests/integration/server/test_images.h"

using namespace servelab::testing;
using Catch::Matchers::Contains;

namespace {

std::string status_line(const std::string& raw) { return raw.substr(0, raw.find("\r\n")); }

}  // namespace

TEST_CASE("/metrics counts the answers the HTTP layer gives by status", "[server][hostile]") {
  TempDir store;
  TestServer ts(store.path.string(), [](auto&, servelab::server::ServerOptions& so) {
    so.max_body_bytes = 4096;
  });
  const uint16_t port = ts.port();
  CHECK(status_line(send_raw(port, "POST /classify/x HTTP/1.1\r\nHost: x\r\n"
                                   "Content-Length: 100000\r\n\r\n"))
            .find(" 413 ") != std::string::npos);
  CHECK(status_line(send_raw(port, "GET /health HTTP/1.1\r\n\r\n")).find(" 400 ") != std::string::npos);
  CHECK(status_line(send_raw(port, "GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n"))
            .find(" 414 ") != std::string::npos);
  CHECK(status_line(send_raw(port, "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " +
                                       std::string(70000, 'b') + "\r\n\r\n"))
            .find(" 431 ") != std::string::npos);
  CHECK(status_line(send_raw(port, "POST /classify/x HTTP/1.1\r\nHost: x\r\n"
                                   "Transfer-Encoding: gzip\r\n\r\n"))
            .find(" 501 ") != std::string::npos);
  const std::string metrics = HttpClient(port).get("/metrics").body;
  for (const char* code : {"413", "400", "414", "431", "501"}) {
    INFO(code);
    CHECK(metric_sum(metrics, "servelab_http_requests_total{route=\"transport\",code=\"" +
                                  std::string(code) + "\"}") == 1);
  }
  CHECK(metric_sum(metrics, "servelab_http_requests_in_flight") == 1);  // the /metrics itself
}

TEST_CASE("X-SLO-Ms, a name in use and an encoded slash get clear answers", "[server][hostile]") {
  TempDir store;
  TestServer ts(store.path.string());
  HttpClient c(ts.port());
  REQUIRE(c.post_form("/register", register_form("noop", "noop")).status == 201);

  auto again = c.post_form("/register", register_form("noop", "noop"));
  CHECK(again.status == 409);
  CHECK_THAT(again.body, Contains("DELETE /models/noop") && Contains("another name"));

  auto slash = c.post_json("/v2/models/noop%2finfer", "{}");
  CHECK(slash.status == 400);
  CHECK_THAT(slash.body, Contains("encoded slash"));

  const std::string jpg = read_file(image_file("gradient.jpg"));
  for (const char* hex : {"0x10", "0X10", "0x1p4"}) {
    INFO(hex);
    c.set_header("X-SLO-Ms", hex);
    auto r = c.request("POST", "/classify/noop", jpg);
    CHECK(r.status == 400);
    CHECK_THAT(r.body, Contains("decimal"));
  }
  c.set_header("X-SLO-Ms", "16.5e0");
  CHECK(c.request("POST", "/classify/noop", jpg).status == 200);
}
