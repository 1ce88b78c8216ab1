// A connection of HttpTransport (http_connection.h) answering: the client watched while its
// request is served, the reply delivered to the strand and written, and the close.
#include <sys/socket.h>

#include <array>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/status.hpp>
#include <cerrno>
#include <string_view>

#include "engine/server/http_connection.h"

namespace servelab::server::transport {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

void Session::watch_if_in_flight() {
  if (!client_ || answering_ || watching_) return;
  watching_ = true;
  watch_client();
}

void Session::watch_client() {
  stream_.socket().async_wait(
      tcp::socket::wait_read,
      [self = shared_from_this(), client = client_](beast::error_code ec) {
        if (!ec && client == self->client_) self->on_readable();
      });
}

void Session::on_readable() {
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

void Session::uncount() {
  if (counted_ && --shared_->in_flight == 0) shared_->trimmer->went_idle();
  counted_ = false;
}

void Session::release_body() {
  const size_t bytes = out_body_.capacity();
  if (bytes <= kKeepBodyBytes) return;
  std::string().swap(out_body_);
  shared_->trimmer->freed(bytes);
}

void Session::deliver(const std::weak_ptr<Session>& weak, Gate& gate,
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

void Session::write(HttpResponse res, bool force_close, bool counted) {
  answering_ = true;
  if (interim_writing_) {  // one write at a time: the answer follows the informational one
    deferred_ = Deferred{std::move(res), force_close, counted};
    return;
  }
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

void Session::write_interim(const std::shared_ptr<ClientGone>& client,
                            const HttpResponse& res) {
  if (client != client_ || answering_ || interim_sent_) return;
  if (res.status < 100 || res.status > 199 || res.status == 101) return;
  interim_sent_ = interim_writing_ = true;
  std::string& h = interim_head_;
  h = "HTTP/1.1 " + std::to_string(res.status) + " ";
  const auto reason = http::obsolete_reason(static_cast<http::status>(res.status));
  h.append(reason.data(), reason.size());
  for (const auto& [name, value] : res.headers) {
    if (name.empty() || name.find_first_of("\r\n:") != name.npos ||
        value.find_first_of("\r\n") != value.npos)
      continue;
    h += "\r\n" + name + ": " + value;
  }
  h += "\r\n\r\n";
  net::async_write(stream_, net::buffer(interim_head_),
                   [self = shared_from_this()](beast::error_code, size_t) {
                     self->interim_writing_ = false;  // a failed write: the answer's fails too
                     if (!self->deferred_) return;
                     Deferred d = std::move(*self->deferred_);
                     self->deferred_.reset();
                     self->write(std::move(d.res), d.force_close, d.counted);
                   });
}

void Session::write_head(const HttpResponse& res, bool close_after) {
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

void Session::drain_and_close() {
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  deadline_.expires_after(std::chrono::seconds(2));
  drain_ = std::make_shared<std::vector<char>>(1 << 16);
  drain_more();
}

void Session::drain_more() {
  stream_.async_read_some(net::buffer(*drain_),
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            if (ec) return self->close();
                            self->drain_more();
                          });
}

void Session::close() {
  deadline_.stop();
  release_body();
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->sessions.erase(this);
}

}  // namespace servelab::server::transport
