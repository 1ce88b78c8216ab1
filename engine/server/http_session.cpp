// A connection of HttpTransport (http_connection.h) reading a request: the header checked
// before the body, then the request handed to the handler; and the start of a connection.
#include "engine/server/http_connection.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <iterator>
#include <optional>
#include <vector>

namespace servelab::server::transport {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

bool is_http_error(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category();
}

constexpr uint32_t kMaxHeaderBytes = 64 * 1024;

// The bytes of the request line and header fields as they came (CRLFs included).
size_t header_bytes(const http::request<RequestBody>& msg) {
  size_t n = msg.method_string().size() + 1 + msg.target().size() + 11 + 2;
  for (const auto& field : msg) n += field.name_string().size() + 2 + field.value().size() + 2;
  return n;
}

}  // namespace

void Session::run() {
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
    self->deadline_.start(self, [s = self.get()] { s->close(); },
                          [s = self.get()] { s->watch_if_in_flight(); });
    self->read_header();
  });
}

void Session::read_header() {
  parser_.emplace();
  parser_->body_limit(shared_->options.max_body_bytes);
  parser_->header_limit(kMaxHeaderBytes);
  json_limited_ = false;
  deadline_.expires_after(shared_->options.idle_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          beast::bind_front_handler(&Session::on_header, shared_from_this()));
}

void Session::on_header(beast::error_code ec, size_t) {
  if (ec) return on_error(ec);
  auto& msg = parser_->get();
  head_ = msg.method() == http::verb::head;
  if (auto refusal = refuse_header(msg)) return refuse(std::move(*refusal));
  auto cl = parser_->content_length();
  if (cl && *cl > shared_->options.max_body_bytes) return on_error(http::error::body_limit);
  if (refuse_json(msg, cl)) return write(json_too_large(), true, false);
  auto expect = msg[http::field::expect];
  if (beast::iequals(expect, "100-continue")) {
    auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
    http::async_write(stream_, *cont,
                      [self = shared_from_this(), cont](beast::error_code ec, size_t) {
                        if (ec) return self->close();
                        self->read_body();
                      });
    return;
  }
  read_body();
}

std::optional<HttpResponse> Session::refuse_header(const http::request<RequestBody>& msg) const {
  // Beast's header_limit bounds what one read may hold, not the header: a header that came in
  // several reads is measured here.
  if (header_bytes(msg) > kMaxHeaderBytes) {
    return error_response(431, "request header is larger than the limit of 64 KiB");
  }
  if (msg.target().size() > shared_->options.max_target_bytes) {
    return error_response(414, "request target is longer than the limit of " +
                                   std::to_string(shared_->options.max_target_bytes) + " bytes");
  }
  if (msg.version() >= 11 && msg.find(http::field::host) == msg.end()) {
    return error_response(400, "missing Host header (required by HTTP/1.1)");
  }
  auto te = msg.find(http::field::transfer_encoding);
  if (te != msg.end() && !beast::iequals(te->value(), "chunked")) {
    return error_response(501, "Transfer-Encoding '" + std::string(te->value()) +
                                   "' is not supported (only chunked)");
  }
  return std::nullopt;
}

bool Session::refuse_json(const http::request<RequestBody>& msg,
                          const boost::optional<uint64_t>& cl) {
  if (!RequestBody::is_infer(msg)) return false;
  const size_t limit = shared_->options.max_json_body_bytes;
  const auto split = RequestBody::split_point(msg);
  if (!split && !cl) {
    json_limited_ = true;
    parser_->body_limit(std::min(limit, shared_->options.max_body_bytes));
    return false;
  }
  return (split ? *split : *cl) > limit;
}

HttpResponse Session::json_too_large() const {
  return error_response(413, "the JSON of a v2 infer request is larger than the limit of " +
                                 std::to_string(shared_->options.max_json_body_bytes) +
                                 " bytes (--max-json-body-bytes); send large tensors as "
                                 "binary data (Inference-Header-Content-Length)");
}

void Session::read_body() {
  // The body often came in with the header: parse it here. Through async_read it would
  // complete without I/O, and Beast posts such a completion (a scheduler round trip that
  // often wakes the other IO thread).
  beast::error_code ec;
  while (!parser_->is_done() && buffer_.size() > 0) {
    const size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec == http::error::need_more) break;
    if (ec) return on_error(ec);
    if (used == 0) break;
  }
  if (parser_->is_done()) return on_read({}, 0);
  http::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&Session::on_read, shared_from_this()));
}

void Session::on_error(beast::error_code ec) {
  if (ec == http::error::body_limit && json_limited_) return write(json_too_large(), true, false);
  if (ec == http::error::body_limit) {
    return refuse(error_response(413, "request body is larger than the limit of " +
                                          std::to_string(shared_->options.max_body_bytes) +
                                          " bytes"));
  }
  if (ec == http::error::header_limit) {
    return refuse(error_response(431, "request header is larger than the limit of 64 KiB"));
  }
  if (is_http_error(ec) && ec != http::error::end_of_stream && ec != http::error::partial_message) {
    return refuse(error_response(400, "malformed HTTP request: " + ec.message()));
  }
  close();  // end of stream, timeout, reset
}

void Session::refuse(HttpResponse res) {
  if (shared_->options.refused) shared_->options.refused(res.status);
  write(std::move(res), true, false);
}

void Session::on_read(beast::error_code ec, size_t) {
  if (ec) return on_error(ec);
  auto msg = parser_->release();
  keep_alive_ = msg.keep_alive();
  HttpRequest req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  split_target(req.target, &req.path, &req.query);
  req.headers.reserve(static_cast<size_t>(std::distance(msg.begin(), msg.end())));
  for (const auto& f : msg) {
    std::string name(f.name_string());
    for (auto& c : name)  // field names are ASCII tokens (the parser checked)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    req.headers.emplace_back(std::move(name), std::string(f.value()));
  }
  req.body = std::move(msg.body().bytes);
  req.tensor = std::move(msg.body().tensor);
  req.tensor_split = msg.body().split;
  deadline_.expires_never();  // the engine bounds the wait (request timeout)
  shared_->in_flight++;
  shared_->trimmer->request_started();
  counted_ = true;
  const size_t body_bytes = req.body.capacity() + req.tensor.capacity() * sizeof(float);
  req.client = client_ = std::make_shared<ClientGone>();
  interim_sent_ = answering_ = false;
  req.interim = [weak = weak_from_this(), gate = shared_->gate,
                 client = client_](const HttpResponse& res) {
    std::lock_guard<std::mutex> lock(gate->mu);
    if (!gate->open) return;
    if (auto self = weak.lock())
      net::post(self->stream_.get_executor(),
                [self, client, res] { self->write_interim(client, res); });
  };

  auto called = std::make_shared<std::atomic<bool>>(false);
  Reply reply = [weak = weak_from_this(), gate = shared_->gate, called,
                 shared = shared_](HttpResponse res) {
    deliver(weak, *gate, *called, std::move(res), shared);
  };
  try {
    shared_->handler(std::move(req), std::move(reply));  // no copy of the Reply
  } catch (const std::exception& e) {
    deliver(weak_from_this(), *shared_->gate, *called,
            error_response(500, std::string("internal error: ") + e.what()), shared_);
  }
  shared_->trimmer->freed(body_bytes);  // the handler has taken or dropped the body
  watching_ = false;  // armed by the next tick that finds it still in flight, or at once:
  if (body_bytes >= kWatchAtOnceBytes) watch_if_in_flight();
}

void start_session(Socket socket, Shared* shared) {
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  auto session = std::make_shared<Session>(std::move(socket), shared);
  {
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->sessions.emplace(session.get(), session);
  }
  session->run();
}

}  // namespace servelab::server::transport
