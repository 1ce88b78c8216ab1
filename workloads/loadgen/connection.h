// One keep-alive HTTP/1.1 client connection of the load generator (private to
// servelab_loadgen). Not thread-safe: create, use and destroy it on the thread that runs its
// io_context; callbacks run there too.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace servelab::loadgen::detail {

namespace http = boost::beast::http;
using Request = http::request<http::string_body>;

// Result of one exchange: the HTTP status code, or 0 with an error.
struct Exchange {
  unsigned status = 0;
  bool timed_out = false;       // the client-side deadline passed
  std::string error;            // transport error message when status == 0
  std::string body;             // response body (the server's JSON answer)
  int64_t route_seq = -1;       // servelab route's X-Servelab-Route-Seq (backups on), or -1
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using Done = std::function<void(const Exchange&)>;

  // `endpoints` and the counters must outlive the connection.
  Connection(boost::asio::io_context& io,
             const boost::asio::ip::tcp::resolver::results_type& endpoints,
             uint64_t* connects, uint64_t* retries);

  // Sends `request` (kept alive by the caller until `done` runs) and calls `done` once with
  // the outcome. Connects first when not connected; when a reused keep-alive socket fails
  // before any response arrives (the server closed it while idle), reconnects and resends
  // once. `timeout` (seconds) bounds the whole exchange. The connection is busy until `done`.
  void send(const Request& request, double timeout, Done done);
  // Opens the TCP connection without sending anything (a no-op when already connected) and
  // calls `done` once: status 0 with an empty error on success, the error otherwise. The
  // connection is busy until then.
  void open(double timeout, Done done);
  bool busy() const { return busy_; }

 private:
  void connect();
  void write();
  void on_failure(boost::system::error_code ec);
  void close();
  void finish(const Exchange& e);

  boost::asio::io_context& io_;
  const boost::asio::ip::tcp::resolver::results_type& endpoints_;
  std::unique_ptr<boost::beast::tcp_stream> stream_;
  boost::beast::flat_buffer buffer_;
  http::response<http::string_body> response_;
  const Request* request_ = nullptr;
  Done done_;
  std::chrono::steady_clock::time_point deadline_;
  bool busy_ = false, connected_ = false, reused_ = false, retried_ = false;
  uint64_t* connects_;
  uint64_t* retries_;
};

}  // namespace servelab::loadgen::detail
