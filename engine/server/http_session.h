// Internal to HttpTransport (http_transport.cpp, the listener; http_connection.h with
// http_session.cpp and http_session_write.cpp, the connections): what the two share. Not a public header: Beast stays out of
// http_transport.h.
//
// One strand per connection; a connection reads one request, hands it to the handler, and
// reads the next only after the response is written (HTTP/1.1 keep-alive, no pipelining).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/basic_stream.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "engine/server/heap_trim.h"
#include "engine/server/http_transport.h"

namespace servelab::server::transport {

// Connections run on a strand, named by its concrete type: through the type-erased
// any_io_executor of beast::tcp_stream, every composed operation's work guard allocated
// (~15 allocations per request, a tenth of all the server made for a v2 infer request).
using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
using Stream = boost::beast::basic_stream<boost::asio::ip::tcp, Strand>;
using Socket = Stream::socket_type;

// Replies check the gate before posting to a connection, so that none reaches the io_context
// once the transport has stopped.
struct Gate {
  std::mutex mu;
  bool open = true;
};

class Session;  // http_connection.h

// The transport's shared state that sessions reach while running on IO threads.
struct Shared {
  TransportOptions options;
  Handler handler;
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  std::mutex mu;  // guards `sessions`
  std::unordered_map<Session*, std::shared_ptr<Session>> sessions;  // open connections
  std::atomic<int> in_flight{0};  // requests handed to the handler and not yet written
  std::optional<HeapTrimmer> trimmer;  // told of large request bodies and answers freed
};

// Serves the connection on `socket` (accepted onto its own strand) until it closes; the
// session lists itself in shared->sessions meanwhile. `shared` must outlive the io_context's
// handlers. Any thread.
void start_session(Socket socket, Shared* shared);

}  // namespace servelab::server::transport
