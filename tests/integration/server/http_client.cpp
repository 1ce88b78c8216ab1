#include "tests/integration/server/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace servelab::testing {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

struct HttpClient::Impl {
  net::io_context ioc;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  uint16_t port;
};

HttpClient::HttpClient(uint16_t port) : impl_(std::make_unique<Impl>()) { impl_->port = port; }
HttpClient::~HttpClient() = default;

ClientResponse HttpClient::request(const std::string& method, const std::string& target,
                                   const std::string& body, const std::string& content_type) {
  auto& im = *impl_;
  if (!im.stream) {
    im.stream.emplace(im.ioc);
    im.stream->connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), im.port));
    im.buffer.clear();
    ++connections_;
  }
  http::request<http::string_body> req;
  req.method_string(method);
  req.target(target);
  req.version(11);
  req.set(http::field::host, "127.0.0.1");
  req.keep_alive(true);
  if (!content_type.empty()) req.set(http::field::content_type, content_type);
  for (const auto& [name, value] : headers_) req.set(name, value);
  req.body() = body;
  req.prepare_payload();
  im.stream->expires_after(std::chrono::seconds(60));
  beast::error_code ec;
  http::write(*im.stream, req, ec);
  // A server that answers early (413) may close before the whole body was written; the
  // response can still be read.
  if (ec && ec != net::error::broken_pipe && ec != net::error::connection_reset) {
    im.stream.reset();
    throw std::runtime_error("http client: write " + target + ": " + ec.message());
  }
  http::response_parser<http::string_body> parser;
  parser.body_limit(1u << 30);
  http::read(*im.stream, im.buffer, parser, ec);
  if (ec) {
    im.stream.reset();
    throw std::runtime_error("http client: read " + target + ": " + ec.message());
  }
  auto res = parser.release();
  ClientResponse out;
  out.status = int(res.result_int());
  out.body = std::move(res.body());
  for (const auto& f : res) {
    std::string name(f.name_string());
    for (auto& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
    out.headers[name] = std::string(f.value());
  }
  out.closed = !res.keep_alive();
  if (out.closed) im.stream.reset();
  return out;
}

ClientResponse HttpClient::post_form(const std::string& target,
                                     const std::vector<FormField>& fields) {
  std::string type;
  std::string body = multipart_body(fields, &type);
  return request("POST", target, body, type);
}

std::string multipart_body(const std::vector<FormField>& fields, std::string* content_type) {
  const std::string boundary = "servelab-test-boundary-7f3a9c";
  *content_type = "multipart/form-data; boundary=" + boundary;
  std::string body;
  for (const auto& f : fields) {
    body += "--" + boundary + "\r\n";
    body += "Content-Disposition: form-data; name=\"" + f.name + "\"";
    if (!f.filename.empty()) body += "; filename=\"" + f.filename + "\"";
    body += "\r\n";
    if (!f.filename.empty()) body += "Content-Type: application/octet-stream\r\n";
    body += "\r\n" + f.data + "\r\n";
  }
  body += "--" + boundary + "--\r\n";
  return body;
}

std::string send_raw(uint16_t port, const std::string& raw) {
  net::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  stream.expires_after(std::chrono::seconds(5));
  net::write(stream, net::buffer(raw));
  std::string out;
  char buf[4096];
  beast::error_code ec;
  while (true) {
    size_t n = stream.read_some(net::buffer(buf), ec);
    out.append(buf, n);
    if (ec) break;
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace servelab::testing
