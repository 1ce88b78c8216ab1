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
    : ex_(std::move(ex)), endpoint_(std::move(endpoint)), max_body_bytes_(max_body_bytes),
      deadline_timer_(ex_) {}

void BackendConnection::send(std::shared_ptr<const BackendRequest> request,
                             Clock::time_point deadline, Done done, Interim interim) {
  assert(!busy_);
  busy_ = true;
  request_ = std::move(request);
  done_ = std::move(done);
  interim_ = std::move(interim);
  deadline_ = deadline;
  resent_ = false;
  timed_out_ = false;
  reused_ = connected_;
  watch_deadline();
  if (connected_) return write();
  connect();
}

void BackendConnection::connect() {
  socket_ = std::make_unique<tcp::socket>(ex_);
  buffer_.consume(buffer_.size());
  socket_->async_connect(endpoint_, [self = shared_from_this()](error_code ec) {
    if (ec) return self->on_failure(ec, BackendFailure::Connect);
    self->connected_ = true;
    error_code ignored;
    self->socket_->set_option(tcp::no_delay(true), ignored);
    self->write();
  });
}

void BackendConnection::write() {
  beast_http::async_write(*socket_, *request_,
                          [self = shared_from_this()](error_code ec, size_t) {
                            if (ec) return self->on_failure(ec, BackendFailure::Broken);
                            self->read();
                          });
}

void BackendConnection::read() {
  parser_.emplace();
  parser_->body_limit(max_body_bytes_);
  parser_->header_limit(64 * 1024);
  beast_http::async_read(*socket_, buffer_, *parser_, [self = shared_from_this()](error_code ec,
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
  if (timed_out_) what = BackendFailure::Timeout;
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
  if (socket_) {
    error_code ignored;
    socket_->shutdown(tcp::socket::shutdown_both, ignored);
    socket_->close(ignored);
  }
  connected_ = false;
}

// Makes the timer end at or before the current exchange's deadline: armed if it is not, and
// moved only for an earlier deadline than its own (with one backend timeout, never: each
// exchange's deadline is later than the last one's).
void BackendConnection::watch_deadline() {
  // Armed for this deadline or an earlier one: it fires first and looks again then.
  if (timer_armed_ && deadline_timer_.expiry() <= deadline_) return;
  timer_armed_ = true;
  deadline_timer_.expires_at(deadline_);  // a pending wait ends as aborted
  deadline_timer_.async_wait([weak = weak_from_this()](error_code ec) {
    if (ec) return;  // moved, or the connection is gone
    if (auto self = weak.lock()) self->on_deadline_timer();
  });
}

// The exchange in flight, if any, is past its deadline: its socket is closed, so that its
// pending operation fails and reports a timeout. Else the timer waits for its deadline.
void BackendConnection::on_deadline_timer() {
  timer_armed_ = false;
  if (!busy_) return;  // idle: the next exchange arms it
  if (Clock::now() < deadline_) return watch_deadline();
  timed_out_ = true;
  close();
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
