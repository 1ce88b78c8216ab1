// FixedDelayServer: accept loop and one session per connection, all on one io_context.
#include "tests/integration/loadgen/fixed_delay_server.h"

#include <utility>  // before Asio: Boost 1.74 awaitable.hpp uses std::exchange unincluded
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <mutex>

namespace servelab::loadgen::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct FixedDelayServer::State {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::chrono::steady_clock::duration delay;
  unsigned close_after = 0;
  unsigned short port = 0;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  mutable std::mutex mu;  // guards everything below
  uint64_t requests = 0, connections = 0;
  uint32_t in_flight = 0, max_in_flight = 0;
  std::vector<std::string> targets;
  std::vector<double> receive_times;
  std::vector<size_t> body_sizes;
  std::vector<std::string> slo_headers;  // X-SLO-Ms ("" when absent)
};

namespace {

using State = FixedDelayServer::State;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, State& state)
      : stream_(std::move(socket)), timer_(state.io), state_(state) {}
  void read() {
    request_ = {};
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return;  // client closed or error: drop the session
                       self->received();
                     });
  }

 private:
  void received() {
    {
      std::lock_guard lock(state_.mu);
      ++state_.requests;
      state_.max_in_flight = std::max(state_.max_in_flight, ++state_.in_flight);
      state_.targets.push_back(std::string(request_.target()));
      state_.receive_times.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - state_.t0).count());
      state_.body_sizes.push_back(request_.body().size());
      state_.slo_headers.push_back(std::string(request_["X-SLO-Ms"]));
    }
    timer_.expires_after(state_.delay);
    timer_.async_wait([self = shared_from_this()](beast::error_code) { self->respond(); });
  }
  void respond() {
    const std::string target(request_.target());
    const std::string name = target.substr(target.rfind('/') + 1);
    auto status = http::status::ok;
    if (name == "busy") status = http::status::service_unavailable;
    if (name == "late") status = http::status::gateway_timeout;
    if (name == "broken") status = http::status::internal_server_error;
    if (name == "dropped") status = http::status::gateway_timeout;  // as servelab drops late ones
    ++served_;
    const bool keep = request_.keep_alive() &&
                      (state_.close_after == 0 || served_ < state_.close_after);
    response_ = http::response<http::string_body>(status, request_.version());
    response_.set(http::field::content_type, "application/json");
    response_.body() = name == "dropped" ? std::string("{\"error\":\"late\",\"status\":\"dropped\"}")
                                         : "{\"model\":\"" + name + "\"}";
    response_.keep_alive(keep);
    response_.prepare_payload();
    http::async_write(stream_, response_,
                      [self = shared_from_this(), keep](beast::error_code ec, size_t) {
                        {
                          std::lock_guard lock(self->state_.mu);
                          --self->state_.in_flight;
                        }
                        if (ec) return;
                        if (keep) return self->read();
                        beast::error_code ignored;
                        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
  asio::steady_timer timer_;
  State& state_;
  unsigned served_ = 0;
};

void accept(State& state) {
  state.acceptor.async_accept([&state](beast::error_code ec, tcp::socket socket) {
    if (ec) return;  // acceptor closed
    {
      std::lock_guard lock(state.mu);
      ++state.connections;
    }
    std::make_shared<Session>(std::move(socket), state)->read();
    accept(state);
  });
}

}  // namespace

FixedDelayServer::FixedDelayServer(double delay_s, unsigned close_after)
    : state_(std::make_shared<State>()) {
  state_->delay = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(delay_s));
  state_->close_after = close_after;
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  state_->acceptor.open(endpoint.protocol());
  state_->acceptor.set_option(asio::socket_base::reuse_address(true));
  state_->acceptor.bind(endpoint);
  state_->acceptor.listen();
  state_->port = state_->acceptor.local_endpoint().port();
  accept(*state_);
  thread_ = std::thread([s = state_] { s->io.run(); });
}

FixedDelayServer::~FixedDelayServer() {
  state_->io.stop();
  thread_.join();
}

std::string FixedDelayServer::url() const {
  return "http://127.0.0.1:" + std::to_string(state_->port);
}
uint64_t FixedDelayServer::requests() const {
  std::lock_guard lock(state_->mu);
  return state_->requests;
}
uint64_t FixedDelayServer::connections() const {
  std::lock_guard lock(state_->mu);
  return state_->connections;
}
uint32_t FixedDelayServer::max_in_flight() const {
  std::lock_guard lock(state_->mu);
  return state_->max_in_flight;
}
std::vector<std::string> FixedDelayServer::targets() const {
  std::lock_guard lock(state_->mu);
  return state_->targets;
}
std::vector<double> FixedDelayServer::receive_times() const {
  std::lock_guard lock(state_->mu);
  return state_->receive_times;
}
std::vector<size_t> FixedDelayServer::body_sizes() const {
  std::lock_guard lock(state_->mu);
  return state_->body_sizes;
}
std::vector<std::string> FixedDelayServer::slo_headers() const {
  std::lock_guard lock(state_->mu);
  return state_->slo_headers;
}

}  // namespace servelab::loadgen::test
