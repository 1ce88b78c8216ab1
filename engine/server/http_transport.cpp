// The listener behind HttpTransport: binds, accepts onto a strand per connection (the
// connections themselves are in http_session.cpp), pauses at the descriptor limit, and
// stops with a grace period for replies on their way.
#include "engine/server/http_transport.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "engine/server/http_session.h"

namespace servelab::server {
namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using transport::Shared;
using transport::Socket;
using transport::start_session;

struct HttpTransport::Impl {
  // One IO thread: the scheduler's one-thread mode (handlers posted from that thread skip the
  // shared queue's lock; posts from other threads stay safe).
  explicit Impl(unsigned io_threads)
      : ioc(io_threads == 1 ? 1 : BOOST_ASIO_CONCURRENCY_HINT_DEFAULT) {}

  net::io_context ioc;  // first member: destroyed last
  Shared shared;
  std::optional<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  uint16_t port = 0;
  bool running = false;
  // Listener state, used on the acceptor's strand only.
  std::optional<net::steady_timer> backoff_timer;  // on the acceptor's executor
  bool paused = false;

  void accept() {
    acceptor->async_accept(net::make_strand(ioc), [this](beast::error_code ec, Socket s) {
      if (ec == net::error::operation_aborted || !acceptor->is_open()) return;
      if (out_of_descriptors(ec)) return back_off();
      if (paused) {
        paused = false;
        log("accepting connections again");
      }
      if (!ec) start_session(std::move(s), &shared);
      accept();
    });
  }

  static bool out_of_descriptors(const beast::error_code& ec) {
    return ec == net::error::no_descriptors ||
           ec == boost::system::errc::too_many_files_open_in_system;
  }

  // EMFILE/ENFILE: the pending connection stays in the backlog; retrying at once would spin.
  // Pause the listener (open connections keep being served) and try again later.
  void back_off() {
    if (!paused) {
      paused = true;
      log("out of file descriptors; pausing accept() and serving open connections");
    }
    backoff_timer->expires_after(std::chrono::milliseconds(100));
    backoff_timer->async_wait([this](beast::error_code ec) {
      if (!ec && acceptor->is_open()) accept();
    });
  }

  void log(const std::string& line) const {
    if (shared.options.log) shared.options.log(line);
  }
};

HttpTransport::HttpTransport(TransportOptions options, Handler handler)
    : impl_(std::make_unique<Impl>(options.io_threads)) {
  impl_->shared.options = std::move(options);
  impl_->shared.handler = std::move(handler);
  impl_->shared.trimmer.emplace(impl_->ioc, std::chrono::seconds(1),
                                impl_->shared.options.idle_trim, impl_->shared.in_flight,
                                impl_->shared.options.trimmed);
}

HttpTransport::~HttpTransport() { stop(); }

void HttpTransport::trim_when_idle() { impl_->shared.trimmer->went_idle(); }

void HttpTransport::start() {
  auto& im = *impl_;
  beast::error_code ec;
  auto addr = net::ip::make_address(im.shared.options.bind, ec);
  if (ec) throw std::runtime_error("invalid bind address '" + im.shared.options.bind + "'");
  tcp::endpoint ep(addr, im.shared.options.port);
  im.acceptor.emplace(net::make_strand(im.ioc));
  im.backoff_timer.emplace(im.acceptor->get_executor());
  im.acceptor->open(ep.protocol(), ec);
  if (!ec) im.acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) im.acceptor->bind(ep, ec);
  if (!ec) im.acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error("cannot listen on " + im.shared.options.bind + ":" +
                             std::to_string(im.shared.options.port) + ": " + ec.message());
  }
  im.port = im.acceptor->local_endpoint().port();
  im.accept();
  im.running = true;
  unsigned n = std::max(1u, im.shared.options.io_threads);
  if (im.ioc.stopped()) im.ioc.restart();  // run by its owner before start() (context())
  for (unsigned i = 0; i < n; ++i) im.threads.emplace_back([&im] { im.ioc.run(); });
}

uint16_t HttpTransport::port() const { return impl_->port; }

net::io_context& HttpTransport::context() { return impl_->ioc; }

void HttpTransport::stop() {
  auto& im = *impl_;
  if (!im.running) return;
  im.running = false;
  net::post(im.acceptor->get_executor(), [&im] {
    beast::error_code ec;
    im.acceptor->close(ec);
    im.backoff_timer->cancel();
  });
  // Grace period: let responses already on their way be written.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (im.shared.in_flight > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  {
    std::lock_guard<std::mutex> lock(im.shared.gate->mu);
    im.shared.gate->open = false;
  }
  im.ioc.stop();
  for (auto& t : im.threads) t.join();
  im.threads.clear();
  im.backoff_timer.reset();
  im.acceptor.reset();
  std::lock_guard<std::mutex> lock(im.shared.mu);
  im.shared.sessions.clear();
}

}  // namespace servelab::server
