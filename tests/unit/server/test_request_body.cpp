// The transport's request body (request_body.h): the bytes arrive whole and in order, from
// one buffer or several, through Content-Length and chunked bodies, and the parser's body
// limit still holds; a v2 binary-tensor body is split into its JSON header and its values.
#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/server/http_transport.h"
#include "engine/server/request_body.h"
#include "tests/integration/server/http_client.h"

using namespace servelab::server;
using servelab::server::transport::RequestBody;
using servelab::testing::send_raw;

namespace {

// Every byte value, `n` of them.
std::string all_bytes(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + 3) & 0xff);
  return s;
}

std::string body_of(const std::string& raw) {
  const size_t end = raw.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : raw.substr(end + 4);
}

}  // namespace

TEST_CASE("the request body reader appends every buffer of a sequence", "[server][transport]") {
  boost::beast::http::request_header<> header;
  RequestBody::value_type body;
  RequestBody::reader reader(header, body);
  boost::beast::error_code ec;
  reader.init(std::uint64_t{9}, ec);
  REQUIRE(!ec);
  CHECK(body.bytes.capacity() >= 9);
  const std::string a = "abc", b(1, '\0'), c = "defgh";
  std::array<boost::asio::const_buffer, 3> seq{boost::asio::buffer(a), boost::asio::buffer(b),
                                               boost::asio::buffer(c)};
  CHECK(reader.put(seq, ec) == 9);
  REQUIRE(!ec);
  CHECK(reader.put(boost::asio::buffer(a), ec) == 3);
  reader.finish(ec);
  CHECK(!ec);
  CHECK(body.bytes == std::string("abc\0defghabc", 12));
  CHECK_FALSE(body.split);

  RequestBody::value_type other;
  RequestBody::reader too_long(header, other);
  too_long.init(std::uint64_t{other.bytes.max_size()} + 1, ec);
  CHECK(ec == boost::beast::http::error::buffer_overflow);
}

TEST_CASE("a v2 binary-tensor body is split into its JSON header and its values",
          "[server][transport]") {
  boost::beast::http::request_header<> header;
  header.method(boost::beast::http::verb::post);
  header.target("/v2/models/m/infer?x=1");
  header.set("Inference-Header-Content-Length", "5");
  const std::vector<float> values = {1.5f, -2.0f, 3.25f};
  std::string wire = "{\"a\":}";
  wire.resize(5);
  wire.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  boost::beast::error_code ec;
  for (size_t cut : {size_t{1}, size_t{5}, size_t{6}, size_t{9}, size_t{12}, wire.size()}) {
    INFO("first buffer " << cut << " bytes");
    RequestBody::value_type body;
    RequestBody::reader reader(header, body);
    reader.init(std::uint64_t{wire.size()}, ec);
    REQUIRE(!ec);
    const std::string a = wire.substr(0, cut), b = wire.substr(cut);  // values cut anywhere
    std::array<boost::asio::const_buffer, 2> seq{boost::asio::buffer(a), boost::asio::buffer(b)};
    CHECK(reader.put(seq, ec) == wire.size());
    reader.finish(ec);
    CHECK(!ec);
    CHECK(body.split);
    CHECK(body.bytes == wire.substr(0, 5));
    CHECK(body.tensor == values);
  }
  SECTION("not split: another path, another method, no whole values, a bad length") {
    auto split_of = [&](boost::beast::http::request_header<> h, size_t length) {
      RequestBody::value_type body;
      RequestBody::reader reader(h, body);
      reader.init(std::uint64_t{length}, ec);
      const std::string bytes(length, 'x');
      reader.put(boost::asio::buffer(bytes), ec);
      CHECK(body.bytes == bytes.substr(0, body.split ? 5 : length));
      CHECK(body.tensor.size() == (body.split ? (length - 5) / 4 : 0));
      return body.split;
    };
    CHECK(split_of(header, 17));
    CHECK_FALSE(split_of(header, 16));  // 11 bytes after the header: not whole floats
    CHECK_FALSE(split_of(header, 5));   // nothing after the header
    auto other = header;
    other.target("/classify/m");
    CHECK_FALSE(split_of(other, 17));
    other = header;
    other.method(boost::beast::http::verb::put);
    CHECK_FALSE(split_of(other, 17));
    other = header;
    other.set("Inference-Header-Content-Length", "5x");
    CHECK_FALSE(split_of(other, 17));
  }
}

TEST_CASE("request bodies reach the handler byte for byte, within the limit",
          "[server][transport]") {
  TransportOptions opt;
  opt.io_threads = 1;
  opt.max_body_bytes = 4096;
  HttpTransport t(opt, [](HttpRequest req, Reply reply) {
    HttpResponse r;
    r.content_type = "application/octet-stream";
    r.body = std::move(req.body);
    reply(std::move(r));
  });
  t.start();
  const std::string bytes = all_bytes(4096);

  SECTION("Content-Length, at the limit") {
    std::string raw = send_raw(t.port(), "POST /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                         "Content-Length: 4096\r\n\r\n" + bytes);
    CHECK(raw.rfind("HTTP/1.1 200", 0) == 0);
    CHECK(body_of(raw) == bytes);
  }
  SECTION("chunked, in many chunks") {
    std::string req = "POST /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n";
    for (size_t at = 0; at < bytes.size(); at += 1000) {
      const std::string piece = bytes.substr(at, 1000);
      char size[16];
      std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
      req += size + piece + "\r\n";
    }
    req += "0\r\n\r\n";
    std::string raw = send_raw(t.port(), req);
    CHECK(raw.rfind("HTTP/1.1 200", 0) == 0);
    CHECK(body_of(raw) == bytes);
  }
  SECTION("chunked, over the limit: 413") {
    std::string req = "POST /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 5; ++i) req += "3e8\r\n" + std::string(1000, 'y') + "\r\n";
    req += "0\r\n\r\n";
    CHECK(send_raw(t.port(), req).rfind("HTTP/1.1 413", 0) == 0);
  }
  SECTION("Content-Length over the limit: 413 before the body") {
    std::string raw = send_raw(t.port(), "POST /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                         "Content-Length: 4097\r\n\r\n" + bytes + "z");
    CHECK(raw.rfind("HTTP/1.1 413", 0) == 0);
  }
  t.stop();
}
