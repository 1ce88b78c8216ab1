// Connection: connect, write, read one response, keep the socket for the next request.
#include "workloads/loadgen/connection.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <cassert>
#include <charconv>
#include <string_view>

namespace servelab::loadgen::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

// The front end's number of a tied request (a decimal X-Servelab-Route-Seq), or -1.
int64_t route_seq_of(const http::response<http::string_body>& r) {
  auto it = r.find("X-Servelab-Route-Seq");
  if (it == r.end()) return -1;
  const auto v = it->value();
  int64_t seq = -1;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seq);
  return ec == std::errc() && end == v.data() + v.size() && seq >= 0 ? seq : -1;
}

}  // namespace

Connection::Connection(asio::io_context& io, const tcp::resolver::results_type& endpoints,
                       uint64_t* connects, uint64_t* retries)
    : io_(io), endpoints_(endpoints), connects_(connects), retries_(retries) {}

void Connection::send(const Request& request, double timeout, Done done) {
  assert(!busy_);
  busy_ = true;
  request_ = &request;
  done_ = std::move(done);
  retried_ = false;
  deadline_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(timeout));
  reused_ = connected_;
  if (connected_) {
    write();
  } else {
    connect();
  }
}

void Connection::open(double timeout, Done done) {
  assert(!busy_);
  if (connected_) {
    asio::post(io_, [done = std::move(done)] { done(Exchange{}); });
    return;
  }
  busy_ = true;
  request_ = nullptr;
  done_ = std::move(done);
  retried_ = true;  // nothing to resend
  reused_ = false;
  deadline_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(timeout));
  connect();
}

void Connection::connect() {
  stream_ = std::make_unique<beast::tcp_stream>(io_);
  buffer_.consume(buffer_.size());
  stream_->expires_at(deadline_);
  ++*connects_;
  stream_->async_connect(endpoints_, [self = shared_from_this()](error_code ec,
                                                                 const tcp::endpoint&) {
    if (ec) return self->on_failure(ec);
    self->connected_ = true;
    error_code ignored;
    self->stream_->socket().set_option(tcp::no_delay(true), ignored);
    if (!self->request_) return self->finish(Exchange{});  // open() only
    self->write();
  });
}

void Connection::write() {
  stream_->expires_at(deadline_);
  http::async_write(*stream_, *request_, [self = shared_from_this()](error_code ec, size_t) {
    if (ec) return self->on_failure(ec);
    self->response_ = {};
    http::async_read(*self->stream_, self->buffer_, self->response_,
                     [self](error_code ec, size_t) {
                       if (ec) return self->on_failure(ec);
                       Exchange e;
                       e.status = self->response_.result_int();
                       e.body = std::move(self->response_.body());
                       e.route_seq = route_seq_of(self->response_);
                       if (!self->response_.keep_alive()) self->close();
                       self->finish(e);
                     });
  });
}

void Connection::on_failure(error_code ec) {
  close();
  Exchange e;
  if (ec == beast::error::timeout) {
    e.timed_out = true;
    e.error = "no response within the timeout";
    return finish(e);
  }
  // A keep-alive socket the server closed while it sat idle: reconnect and resend once.
  if (reused_ && !retried_) {
    retried_ = true;
    reused_ = false;
    ++*retries_;
    return connect();
  }
  e.error = ec.message();
  finish(e);
}

void Connection::close() {
  if (stream_) {
    error_code ignored;
    stream_->socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_->close();
  }
  connected_ = false;
}

void Connection::finish(const Exchange& e) {
  busy_ = false;
  request_ = nullptr;
  Done done = std::move(done_);
  done_ = nullptr;
  done(e);
}

}  // namespace servelab::loadgen::detail
