// The connections of HttpTransport (see http_session.h): reading a request (the header
// checked before the body), handing it to the handler, writing its reply, and closing.
#include "engine/server/http_session.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <iterator>
#include <string_view>
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

// One connection. Everything runs on its strand, except the Reply it hands out, which any
// thread may call: it posts the response back to the strand (through the Gate).
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
    json_limited_ = false;
    deadline_.expires_after(shared_->options.idle_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::on_header, shared_from_this()));
  }

  void on_header(beast::error_code ec, size_t) {
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

  // Whether a v2 infer request's JSON is over max_json_body_bytes: its JSON header (binary
  // tensors) or its whole body. A chunked JSON body is held to the limit as it is read.
  bool refuse_json(const http::request<RequestBody>& msg, const boost::optional<uint64_t>& cl) {
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

  HttpResponse json_too_large() const {
    return error_response(413, "the JSON of a v2 infer request is larger than the limit of " +
                                   std::to_string(shared_->options.max_json_body_bytes) +
                                   " bytes (--max-json-body-bytes); send large tensors as "
                                   "binary data (Inference-Header-Content-Length)");
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

  // An answer the transport gives itself, the handler never seeing the request: counted
  // through options.refused, then written, and the connection closed.
  void refuse(HttpResponse res) {
    if (shared_->options.refused) shared_->options.refused(res.status);
    write(std::move(res), true, false);
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
    req.body = std::move(msg.body().bytes);
    req.tensor = std::move(msg.body().tensor);
    req.tensor_split = msg.body().split;
    deadline_.expires_never();  // the engine bounds the wait (request timeout)
    shared_->in_flight++;
    counted_ = true;
    const size_t body_bytes = req.body.capacity() + req.tensor.capacity() * sizeof(float);
    req.client = client_ = std::make_shared<ClientGone>();

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
    watch_client();
  }

  // While its request is served, notices the client closing the connection: the handler
  // hears of it (ClientGone), the answer is no longer awaited and the connection closes.
  void watch_client() {
    stream_.socket().async_wait(
        tcp::socket::wait_read,
        [self = shared_from_this(), client = client_](beast::error_code ec) {
          if (!ec && client == self->client_) self->on_readable();
        });
  }

  void on_readable() {
    char c;
    const ssize_t n = ::recv(stream_.socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return;  // bytes of a next request: the client is still there
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
      return watch_client();
    auto client = std::move(client_);  // end of stream or reset
    uncount();
    close();
    client->fire();
  }

  // The request in flight is answered or abandoned: no longer counted in in_flight.
  void uncount() {
    if (counted_) shared_->in_flight--;
    counted_ = false;
  }

  // Gives a large answer buffer back (the heap trimmer hears of it) instead of keeping it.
  void release_body() {
    const size_t bytes = out_body_.capacity();
    if (bytes <= kKeepBodyBytes) return;
    std::string().swap(out_body_);
    shared_->trimmer->freed(bytes);
  }

  // What a Reply does (any thread): the first call posts `res` to the connection's strand.
  // `shared` is alive while the gate is open.
  static void deliver(const std::weak_ptr<Session>& weak, Gate& gate,
                      std::atomic<bool>& called, HttpResponse res, Shared* shared) {
    if (called.exchange(true)) return;
    std::lock_guard<std::mutex> lock(gate.mu);
    if (!gate.open) return;
    if (auto self = weak.lock()) {
      net::post(self->stream_.get_executor(), [self, res = std::move(res)]() mutable {
        self->write(std::move(res), false, true);
      });
    } else {  // the connection is gone: the answer is freed here
      shared->trimmer->freed(res.body.capacity());
    }  // `self` is released under the gate lock: never the last owner after stop()
  }

  // Writes `res`; then reads the next request, or closes (force_close or no keep-alive).
  // The head is written here rather than by Beast's serializer: its buffer sequences cost
  // about a tenth of the write path's user time, and response fields were allocated one by one.
  // The head and body buffers are the session's, reused from request to request.
  void write(HttpResponse res, bool force_close, bool counted) {
    const bool close_after = force_close || !keep_alive_;
    out_body_ = std::move(res.body);
    write_head(res, close_after);
    if (head_) out_body_.clear();  // HEAD: GET's headers (Content-Length too), no body
    deadline_.expires_after(std::chrono::seconds(30));
    const std::array<net::const_buffer, 2> buffers = {net::buffer(out_head_),
                                                      net::buffer(out_body_)};
    net::async_write(stream_, buffers,
                     [self = shared_from_this(), close_after, counted](beast::error_code ec,
                                                                       size_t) {
                       if (counted) {
                         self->client_.reset();
                         self->uncount();
                       }
                       self->release_body();
                       if (ec) return self->close();
                       if (close_after) return self->drain_and_close();
                       self->read_header();
                     });
  }

  // The status line and header fields of `res` (HTTP/1.1) into out_head_, for a body of
  // out_body_.size() bytes. Extra headers come from handlers; one with CR or LF is dropped.
  void write_head(const HttpResponse& res, bool close_after) {
    auto crlf_free = [](std::string_view s) { return s.find_first_of("\r\n") == s.npos; };
    std::string& h = out_head_;
    h.clear();
    h += "HTTP/1.1 ";
    h += std::to_string(res.status);
    h += ' ';
    const auto reason = http::obsolete_reason(static_cast<http::status>(res.status));
    h.append(reason.data(), reason.size());
    h += "\r\nServer: servelab\r\nContent-Type: ";
    h += crlf_free(res.content_type) ? std::string_view(res.content_type) : "text/plain";
    h += "\r\nContent-Length: ";
    h += std::to_string(out_body_.size());
    if (close_after) h += "\r\nConnection: close";
    for (const auto& [name, value] : res.headers) {
      if (name.empty() || !crlf_free(name) || !crlf_free(value)) continue;
      h += "\r\n";
      h += name;
      h += ": ";
      h += value;
    }
    h += "\r\n\r\n";
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
    release_body();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->sessions.erase(this);
  }

  // How often a connection checks its deadline: limits hold to within this.
  static constexpr std::chrono::seconds kTick{1};
  static constexpr size_t kKeepBodyBytes = 64 * 1024;  // answer buffers kept between answers

  Stream stream_;  // no Beast expiry: `deadline_` bounds each phase
  Shared* shared_;
  ConnectionDeadline deadline_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<RequestBody>> parser_;
  std::shared_ptr<std::vector<char>> drain_;
  std::string out_head_, out_body_;  // the response being written
  bool keep_alive_ = true;
  bool head_ = false;  // the request being answered is HEAD
  bool json_limited_ = false;  // a chunked v2 JSON body: its body limit is the JSON one
  bool counted_ = false;       // a request is in flight (counted in shared_->in_flight)
  std::shared_ptr<ClientGone> client_;  // the request in flight's; null when none
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
