// The transport's per-connection deadlines (ConnectionDeadline: idle keep-alive connections
// and slow request headers are closed) and how a body is read: parsed from what came with
// the header, or read later, with the body limit applied either way.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/clock.h"
#include "engine/server/http_transport.h"
#include "tests/integration/server/http_client.h"

using namespace servelab::server;
using servelab::seconds_since;
using servelab::testing::HttpClient;
using servelab::testing::send_raw;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

Handler body_size_handler() {
  return [](HttpRequest req, Reply reply) {
    reply(json_response(200, nlohmann::json{{"bytes", req.body.size()}}.dump()));
  };
}

std::string first_line(const std::string& raw) { return raw.substr(0, raw.find("\r\n")); }

}  // namespace

TEST_CASE("a request header that never ends is closed after the idle timeout",
          "[server][transport]") {
  TransportOptions opt;
  opt.idle_timeout = std::chrono::seconds(1);
  HttpTransport t(opt, body_size_handler());
  t.start();
  auto t0 = std::chrono::steady_clock::now();
  // send_raw gives up after 5 s; the server must close first (1 s, checked every second).
  std::string got = send_raw(t.port(), "GET /x HTTP/1.1\r\nHost: x\r\n");
  const double secs = seconds_since(t0);
  CHECK(got.empty());
  CHECK(secs >= 0.9);
  CHECK(secs < 3.5);
}

TEST_CASE("an idle keep-alive connection is closed but a busy one is not", "[server][transport]") {
  TransportOptions opt;
  opt.idle_timeout = std::chrono::seconds(1);
  HttpTransport t(opt, body_size_handler());
  t.start();
  net::io_context ioc;
  tcp::socket s(ioc);
  s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), t.port()));
  char buf[4096];
  boost::system::error_code ec;
  for (int i = 0; i < 6; ++i) {  // 1.5 s of requests on one connection: never idle 1 s
    net::write(s, net::buffer(std::string("GET /x HTTP/1.1\r\nHost: x\r\n\r\n")), ec);
    REQUIRE(!ec);
    const size_t n = s.read_some(net::buffer(buf), ec);  // one small response
    REQUIRE(!ec);
    CHECK(first_line(std::string(buf, n)) == "HTTP/1.1 200 OK");
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  auto t0 = std::chrono::steady_clock::now();
  s.read_some(net::buffer(buf), ec);  // nothing more comes: the server closes it
  const double secs = seconds_since(t0);
  CHECK(ec == net::error::eof);
  CHECK(secs >= 0.5);
  CHECK(secs < 3.5);
}

TEST_CASE("a body sent after its header is read and one sent with it is parsed at once",
          "[server][transport]") {
  TransportOptions opt;
  opt.max_body_bytes = 4096;
  HttpTransport t(opt, body_size_handler());
  t.start();
  const std::string body(3000, 'b');
  const std::string head = "POST /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                           "Content-Length: 3000\r\n\r\n";
  std::string together = send_raw(t.port(), head + body);
  CHECK(first_line(together) == "HTTP/1.1 200 OK");
  CHECK(together.find(R"({"bytes":3000})") != std::string::npos);

  net::io_context ioc;
  tcp::socket s(ioc);
  s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), t.port()));
  net::write(s, net::buffer(head + body.substr(0, 1000)));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  net::write(s, net::buffer(body.substr(1000)));
  std::string later;
  char buf[4096];
  boost::system::error_code ec;
  while (!ec) later.append(buf, s.read_some(net::buffer(buf), ec));
  CHECK(first_line(later) == "HTTP/1.1 200 OK");
  CHECK(later.find(R"({"bytes":3000})") != std::string::npos);
}

TEST_CASE("a chunked body over the limit is refused whether or not it came with the header",
          "[server][transport]") {
  TransportOptions opt;
  opt.max_body_bytes = 1024;
  HttpTransport t(opt, body_size_handler());
  t.start();
  const std::string chunked = "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "7d0\r\n" + std::string(2000, 'c') + "\r\n0\r\n\r\n";
  CHECK(first_line(send_raw(t.port(), chunked)) == "HTTP/1.1 413 Payload Too Large");
  const std::string small = "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                            "Connection: close\r\n\r\n3e8\r\n" + std::string(1000, 'c') +
                            "\r\n0\r\n\r\n";
  std::string ok = send_raw(t.port(), small);
  CHECK(first_line(ok) == "HTTP/1.1 200 OK");
  CHECK(ok.find(R"({"bytes":1000})") != std::string::npos);
}
