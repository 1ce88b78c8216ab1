// The connections of HttpTransport (see http_session.h): reading a request (the header
// checked before the body), handing it to the handler, writing its reply, and closing.
#include "engine/server/http_session.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <iterator>
#include <optional>
#include <vector>

#include "engine/server/connection_deadline.h"
#include "engine/server/request_body.h"

namespace servelab::server::transport {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

bool is_http_error(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category();
}

}  // namespace

// One connection. Everything runs on its IO thread, except the Reply it hands out, which any
// thread may call: it posts the response back to that thread (through the Gate).
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Socket&& socket, Shared* shared)
      : stream_(std::move(socket)), shared_(shared), deadline_(stream_.get_executor(), kTick) {
    buffer_.reserve(shared_->options.read_buffer_bytes);
  }

  void run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->deadline_.start(self, [s = self.get()] { s->close(); });
      self->read_header();
    });
  }

 private:
  void read_header() {
    parser_.emplace();
    parser_->body_limit(shared_->options.max_body_bytes);
    parser_->header_limit(64 * 1024);
    deadline_.expires_after(shared_->options.idle_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::on_header, shared_from_this()));
  }

  void on_header(beast::error_code ec, size_t) {
    if (ec) return on_error(ec);
    auto& msg = parser_->get();
    head_ = msg.method() == http::verb::head;
    if (auto refusal = refuse_header(msg)) return write(std::move(*refusal), true, false);
    auto cl = parser_->content_length();
    if (cl && *cl > shared_->options.max_body_bytes) return on_error(http::error::body_limit);
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

  // Answers for a header that the server will not serve, before its body is read.
  std::optional<HttpResponse> refuse_header(const http::request<RequestBody>& msg) const {
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

  void read_body() {
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

  void on_error(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      return write(error_response(413, "request body is larger than the limit of " +
                                           std::to_string(shared_->options.max_body_bytes) +
                                           " bytes"),
                   true, false);
    }
    if (ec == http::error::header_limit) {
      return write(error_response(431, "request header is larger than the limit of 64 KiB"),
                   true, false);
    }
    if (is_http_error(ec) && ec != http::error::end_of_stream && ec != http::error::partial_message) {
      return write(error_response(400, "malformed HTTP request: " + ec.message()), true, false);
    }
    close();  // end of stream, timeout, reset
  }

  void on_read(beast::error_code ec, size_t) {
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
    req.body = std::move(msg.body());
    deadline_.expires_never();  // the engine bounds the wait (request timeout)
    shared_->in_flight++;

    auto called = std::make_shared<std::atomic<bool>>(false);
    Reply reply = [weak = weak_from_this(), gate = shared_->gate, called](HttpResponse res) {
      deliver(weak, *gate, *called, std::move(res));
    };
    try {
      shared_->handler(std::move(req), std::move(reply));  // no copy of the Reply
    } catch (const std::exception& e) {
      deliver(weak_from_this(), *shared_->gate, *called,
              error_response(500, std::string("internal error: ") + e.what()));
    }
  }

  // What a Reply does (any thread): the first call posts `res` to the connection's IO thread.
  static void deliver(const std::weak_ptr<Session>& weak, Gate& gate,
                      std::atomic<bool>& called, HttpResponse res) {
    if (called.exchange(true)) return;
    std::lock_guard<std::mutex> lock(gate.mu);
    if (!gate.open) return;
    if (auto self = weak.lock()) {
      net::post(self->stream_.get_executor(), [self, res = std::move(res)]() mutable {
        self->write(std::move(res), false, true);
      });
    }  // `self` is released under the gate lock: never the last owner after stop()
  }

  // Writes `res`; then reads the next request, or closes (force_close or no keep-alive).
  void write(HttpResponse res, bool force_close, bool counted) {
    auto out = std::make_shared<http::response<http::string_body>>();
    out->version(11);
    out->result(static_cast<unsigned>(res.status));
    out->set(http::field::server, "servelab");
    out->set(http::field::content_type, res.content_type);
    for (auto& [k, v] : res.headers) out->set(k, v);
    out->body() = std::move(res.body);
    bool close_after = force_close || !keep_alive_;
    out->keep_alive(!close_after);
    out->prepare_payload();
    if (head_) out->body().clear();  // HEAD: GET's headers (Content-Length too), no body
    deadline_.expires_after(std::chrono::seconds(30));
    http::async_write(stream_, *out,
                      [self = shared_from_this(), out, close_after, counted](beast::error_code ec,
                                                                             size_t) {
                        if (counted) self->shared_->in_flight--;
                        if (ec) return self->close();
                        if (close_after) return self->drain_and_close();
                        self->read_header();
                      });
  }

  // After an early error response the client may still be sending its body; closing with
  // unread data would reset the connection before it reads the response, so read it away.
  void drain_and_close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    deadline_.expires_after(std::chrono::seconds(2));
    drain_ = std::make_shared<std::vector<char>>(1 << 16);
    drain_more();
  }

  void drain_more() {
    stream_.async_read_some(net::buffer(*drain_),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) return self->close();
                              self->drain_more();
                            });
  }

  void close() {
    deadline_.stop();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->sessions.erase(this);
  }

  // How often a connection checks its deadline: limits hold to within this.
  static constexpr std::chrono::seconds kTick{1};

  Stream stream_;  // no Beast expiry: `deadline_` bounds each phase
  Shared* shared_;
  ConnectionDeadline deadline_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<RequestBody>> parser_;
  std::shared_ptr<std::vector<char>> drain_;
  bool keep_alive_ = true;
  bool head_ = false;  // the request being answered is HEAD
};

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
