// Asynchronous HTTP/1.1 server with keep-alive on Boost.Beast/Asio. A request waiting for its
// response holds no thread: the handler gets a Reply it may call later from any thread, and
// the response is posted back to the connection's strand. Beast stays inside the .cpp.
// Refused before the handler: a target over the limit (414), HTTP/1.1 without Host (400),
// a Transfer-Encoding other than chunked (501), headers over 64 KiB (431), a body over the
// limit (413). HEAD gets the headers of its GET answer and no body. When accept() runs out
// of file descriptors, the listener pauses (logging once) and open connections keep going.
// Thread-safety: start()/stop() from one owning thread; port() from any thread after start().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/server/http_message.h"

namespace boost::asio {
class io_context;
}

namespace servelab::server {

struct TransportOptions {
  std::string bind = "127.0.0.1";   // listen address
  uint16_t port = 0;                // 0: an ephemeral port (see port())
  unsigned io_threads = 2;          // threads running the io_context
  size_t max_body_bytes = 256u << 20;  // larger bodies are answered 413 and the connection closed
  // The JSON of a KServe v2 infer request (POST .../infer): the whole body, or the
  // Inference-Header-Content-Length part of a binary-tensor body. Larger: 413, before the
  // body is read.
  size_t max_json_body_bytes = 16u << 20;
  std::chrono::seconds idle_timeout{60};  // a keep-alive connection idle this long is closed
  // Freed heap memory goes back to the system once no request has been in flight this long
  // (heap_trim.h); zero: never for idleness.
  std::chrono::milliseconds idle_trim{0};
  // Each such trim, and each after large frees: `idle` tells which; called on an IO thread.
  // May be empty.
  std::function<void(bool idle)> trimmed;
  size_t max_target_bytes = 8192;   // longer request targets (URLs) are answered 414
  // Each connection's read buffer. Beast reads at most the buffer's free space (512 bytes
  // when it starts empty), so a 12 KB tensor body took 25 recvmsg calls; 16 KiB takes one or two.
  size_t read_buffer_bytes = 16 * 1024;
  // Each answer the transport gives itself (the refusals above), by status; called on an IO
  // thread before the answer is written. May be empty.
  std::function<void(int status)> refused;
  // Listener events (out of descriptors, accepting again); called on an IO thread. May be empty.
  std::function<void(const std::string&)> log;
};

class HttpTransport {
 public:
  // `handler` is called on IO threads for every request parsed; it must outlive the transport.
  HttpTransport(TransportOptions options, Handler handler);
  ~HttpTransport();  // stop()s
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Binds, listens and starts the IO threads. Throws std::runtime_error with a user-facing
  // message when the address cannot be bound.
  void start();
  uint16_t port() const;
  // Gives the freed heap back once no request has come for the idle trim's delay (none when
  // it is zero), as after an answer: for what the owner's start-up freed. Any thread.
  void trim_when_idle();
  // The io_context the IO threads run, for work that shares them (the cluster front end's
  // forwarder, on a strand of its own). It lives as long as the transport; before start()
  // no thread runs it, so its owner may run it on its own thread meanwhile.
  boost::asio::io_context& context();
  // Stops accepting, closes connections and joins the IO threads. Replies that arrive later
  // are dropped. Idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace servelab::server
