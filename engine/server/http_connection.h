// One connection of HttpTransport (internal; see http_session.h): the header read and
// checked before the body, the request handed to the handler, its reply written, the client
// watched while the request is served, and the close. Reading is in http_session.cpp,
// answering and closing in http_session_write.cpp.
// Everything runs on the connection's strand, except the Reply it hands out, which any thread
// may call: it posts the response back to the strand (through the Gate).
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/server/client_gone.h"
#include "engine/server/connection_deadline.h"
#include "engine/server/http_session.h"
#include "engine/server/request_body.h"

namespace servelab::server::transport {
namespace beast = boost::beast;
namespace http = boost::beast::http;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Socket&& socket, Shared* shared)
      : stream_(std::move(socket)), shared_(shared), deadline_(stream_.get_executor(), kTick) {
    buffer_.reserve(shared_->options.read_buffer_bytes);
  }
  void run();

 private:
  void read_header();
  void on_header(beast::error_code ec, size_t);

  // Answers for a header that the server will not serve, before its body is read.
  std::optional<HttpResponse> refuse_header(const http::request<RequestBody>& msg) const;

  // Whether a v2 infer request's JSON is over max_json_body_bytes: its JSON header (binary
  // tensors) or its whole body. A chunked JSON body is held to the limit as it is read.
  bool refuse_json(const http::request<RequestBody>& msg, const boost::optional<uint64_t>& cl);
  HttpResponse json_too_large() const;

  void read_body();
  void on_error(beast::error_code ec);

  // An answer the transport gives itself, the handler never seeing the request: counted
  // through options.refused, then written, and the connection closed.
  void refuse(HttpResponse res);
  void on_read(beast::error_code ec, size_t);

  // While its request is served, notices the client closing the connection: the handler
  // hears of it (ClientGone), the answer is no longer awaited and the connection closes.
  // Armed at the first tick that finds the request still in flight (within kTick of its
  // dispatch), not at dispatch: a wait on the socket costs a system call (epoll_ctl) and a
  // handler run, which most requests, answered in well under a tick, need not pay; a request
  // whose client went waits at most a tick longer to be dropped. A request whose body is
  // kWatchAtOnceBytes or more is watched at once: a flood of those from clients that go would
  // otherwise pile up their tensors in the queues for that tick.
  static constexpr size_t kWatchAtOnceBytes = size_t{64} << 10;
  void watch_if_in_flight();
  void watch_client();
  void on_readable();

  // The request in flight is answered or abandoned: no longer counted in in_flight.
  void uncount();

  // Gives a large answer buffer back (the heap trimmer hears of it) instead of keeping it.
  void release_body();

  // What a Reply does (any thread): the first call posts `res` to the connection's strand.
  // `shared` is alive while the gate is open.
  static void deliver(const std::weak_ptr<Session>& weak, Gate& gate,
                      std::atomic<bool>& called, HttpResponse res, Shared* shared);

  // Writes `res`; then reads the next request, or closes (force_close or no keep-alive).
  // The head is written here rather than by Beast's serializer: its buffer sequences cost
  // about a tenth of the write path's user time, and response fields were allocated one by one.
  // The head and body buffers are the session's, reused from request to request.
  void write(HttpResponse res, bool force_close, bool counted);

  // The status line and header fields of `res` (HTTP/1.1) into out_head_, for a body of
  // out_body_.size() bytes. Extra headers come from handlers; one with CR or LF is dropped.
  void write_head(const HttpResponse& res, bool close_after);

  // The request's HttpRequest::interim: writes an informational response for the request
  // whose ClientGone is `client`, unless its answer began; the answer waits for it.
  void write_interim(const std::shared_ptr<ClientGone>& client, const HttpResponse& res);

  // After an early error response the client may still be sending its body; closing with
  // unread data would reset the connection before it reads the response, so read it away.
  void drain_and_close();
  void drain_more();

  void close();

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
  // The request in flight's informational response: sent (at most one), being written, and
  // the answer that waits for that write to end.
  struct Deferred {
    HttpResponse res;
    bool force_close = false, counted = false;
  };
  bool interim_sent_ = false, interim_writing_ = false, answering_ = false;
  bool watching_ = false;  // a client watch is armed for the request in flight
  std::string interim_head_;
  std::optional<Deferred> deferred_;
};

}  // namespace servelab::server::transport
