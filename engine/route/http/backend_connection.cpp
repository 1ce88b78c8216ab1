// BackendConnection: connect, write, read one answer (bounded), keep the socket for the next.
#include "engine/route/http/backend_connection.h"

#include <boost/asio/post.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <cassert>

namespace servelab::route {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

// Headers that describe one connection, not the answer: the front end writes its own.
bool hop_by_hop(beast::string_view name) {
  for (const char* h : {"connection", "keep-alive", "transfer-encoding", "content-length",
                        "content-type", "te", "trailer", "upgrade", "date", "server"})
    if (beast::iequals(name, h)) return true;
  return false;
}

std::string lower(beast::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

const char* failure_name(BackendFailure f) {
  switch (f) {
    case BackendFailure::None: return "none";
    case BackendFailure::Connect: return "connect";
    case BackendFailure::Timeout: return "timeout";
    case BackendFailure::Broken: return "broken";
    case BackendFailure::TooLarge: return "too_large";
  }
  return "unknown";
}

BackendConnection::BackendConnection(asio::any_io_executor ex, tcp::endpoint endpoint,
                                     size_t max_body_bytes)
    : ex_(std::move(ex)), endpoint_(std::move(endpoint)), max_body_bytes_(max_body_bytes) {}

void BackendConnection::send(std::shared_ptr<const BackendRequest> request,
                             Clock::time_point deadline, Done done, Interim interim) {
  assert(!busy_);
  busy_ = true;
  request_ = std::move(request);
  done_ = std::move(done);
  interim_ = std::move(interim);
  deadline_ = deadline;
  resent_ = false;
  reused_ = connected_;
  if (connected_) return write();
  connect();
}

void BackendConnection::connect() {
  stream_ = std::make_unique<beast::tcp_stream>(ex_);
  buffer_.consume(buffer_.size());
  stream_->expires_at(deadline_);
  stream_->async_connect(endpoint_, [self = shared_from_this()](error_code ec) {
    if (ec) return self->on_failure(ec, BackendFailure::Connect);
    self->connected_ = true;
    error_code ignored;
    self->stream_->socket().set_option(tcp::no_delay(true), ignored);
    self->write();
  });
}

void BackendConnection::write() {
  stream_->expires_at(deadline_);
  beast_http::async_write(*stream_, *request_,
                          [self = shared_from_this()](error_code ec, size_t) {
                            if (ec) return self->on_failure(ec, BackendFailure::Broken);
                            self->read();
                          });
}

void BackendConnection::read() {
  parser_.emplace();
  parser_->body_limit(max_body_bytes_);
  parser_->header_limit(64 * 1024);
  beast_http::async_read(*stream_, buffer_, *parser_, [self = shared_from_this()](error_code ec,
                                                                                   size_t) {
    if (ec == beast_http::error::body_limit) return self->on_failure(ec, BackendFailure::TooLarge);
    if (ec) return self->on_failure(ec, BackendFailure::Broken);
    auto& res = self->parser_->get();
    BackendAnswer a;
    a.status = res.result_int();
    a.content_type = std::string(res[beast_http::field::content_type]);
    for (const auto& f : res)
      if (!hop_by_hop(f.name_string())) a.headers.emplace_back(lower(f.name_string()), f.value());
    if (a.status / 100 == 1) {  // informational: the final answer follows on this connection
      self->resent_ = true;     // the backend has the request: never send it again
      if (self->interim_) self->interim_(a.status, a.headers);
      return self->read();
    }
    a.body = std::move(res.body());
    const bool keep = res.keep_alive();
    self->parser_.reset();
    if (!keep) self->close();
    self->finish(std::move(a));
  });
}

void BackendConnection::on_failure(error_code ec, BackendFailure what) {
  const bool was_reused = reused_;
  close();
  if (ec == beast::error::timeout) what = BackendFailure::Timeout;
  // A keep-alive socket the backend closed while it sat idle: reconnect and send once more.
  if (what == BackendFailure::Broken && was_reused && !resent_) {
    resent_ = true;
    reused_ = false;
    return connect();
  }
  BackendAnswer a;
  a.failure = what;
  a.error = what == BackendFailure::Timeout    ? "no answer before the deadline"
            : what == BackendFailure::TooLarge ? "answer larger than the limit"
                                               : ec.message();
  finish(std::move(a));
}

void BackendConnection::close() {
  if (stream_) {
    error_code ignored;
    stream_->socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_->close();
  }
  connected_ = false;
}

void BackendConnection::finish(BackendAnswer a) {
  busy_ = false;
  request_.reset();
  Done done = std::move(done_);
  done_ = nullptr;
  interim_ = nullptr;
  if (done) done(std::move(a));
}

}  // namespace servelab::route
