// One keep-alive HTTP/1.1 connection from the front end to one backend (`servelab serve`).
// Not thread-safe: create, use and destroy it on its executor (a strand); its callbacks run
// there too. Beast stays inside the .cpp files of engine/route/http.
// An exchange's deadline is watched by one timer that stays armed across exchanges (it is
// re-armed only when it fires, or for an earlier deadline), not by Beast's tcp_stream expiry,
// which arms and cancels a timer around every read and write (engine/server/
// connection_deadline.h says what that costs a request).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace servelab::route {

namespace beast_http = boost::beast::http;
using BackendRequest = beast_http::request<beast_http::string_body>;

// How one exchange with a backend ended.
enum class BackendFailure {
  None,      // an answer came (any status)
  Connect,   // the TCP connection could not be made (refused, unreachable)
  Timeout,   // no whole answer before the deadline
  Broken,    // the connection failed after it was made, before a whole answer
  TooLarge,  // the answer was larger than the limit
};
const char* failure_name(BackendFailure f);

struct BackendAnswer {
  BackendFailure failure = BackendFailure::None;
  std::string error;  // what failed, for messages (failure != None)
  unsigned status = 0;
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;  // end-to-end headers, lowercase
  std::string body;
};

class BackendConnection : public std::enable_shared_from_this<BackendConnection> {
 public:
  using Done = std::function<void(BackendAnswer)>;
  // An informational (1xx) answer before the final one: its status and end-to-end headers.
  using Interim = std::function<void(unsigned, const std::vector<std::pair<std::string,
                                                                            std::string>>&)>;
  using Clock = std::chrono::steady_clock;

  // `endpoint` is the backend's resolved address; answers over `max_body_bytes` fail. Its
  // socket and callbacks run on `ex` (the forwarder's strand).
  BackendConnection(boost::asio::any_io_executor ex, boost::asio::ip::tcp::endpoint endpoint,
                    size_t max_body_bytes);

  // Sends `request` and calls `done` once. Connects first when not connected; when a reused
  // keep-alive socket fails before any answer (the backend closed it while idle), reconnects
  // and sends once more (never after an informational answer came). `deadline` bounds the
  // whole exchange. `interim` (may be empty) hears each 1xx answer (a tied copy's server says
  // so when the copy leaves its queue: docs/cluster.md). Busy until `done` runs.
  void send(std::shared_ptr<const BackendRequest> request, Clock::time_point deadline,
            Done done, Interim interim = {});
  bool busy() const { return busy_; }
  bool connected() const { return connected_; }
  // Closes the socket; an exchange in flight fails (Broken). Idempotent.
  void close();

 private:
  void connect();
  void write();
  void read();
  void on_failure(boost::system::error_code ec, BackendFailure what);
  void finish(BackendAnswer a);
  void watch_deadline();
  void on_deadline_timer();

  boost::asio::any_io_executor ex_;
  boost::asio::ip::tcp::endpoint endpoint_;
  size_t max_body_bytes_;
  std::unique_ptr<boost::asio::ip::tcp::socket> socket_;
  boost::asio::steady_timer deadline_timer_;
  bool timer_armed_ = false;         // a wait is pending, to end at the timer's expiry()
  bool timed_out_ = false;           // the deadline closed the socket of this exchange
  boost::beast::flat_buffer buffer_;
  std::optional<beast_http::response_parser<beast_http::string_body>> parser_;
  std::shared_ptr<const BackendRequest> request_;
  Done done_;
  Interim interim_;
  Clock::time_point deadline_;
  bool busy_ = false, connected_ = false, reused_ = false, resent_ = false;
};

}  // namespace servelab::route
