// The baseline of scripts/bench-server: the least an asynchronous Boost.Beast HTTP/1.1 server
// does per request (read the whole request, body included, and write a small fixed JSON
// response, with keep-alive), with the same number of IO threads as the server it is compared
// with. Binds 127.0.0.1 only; prints `listening on 127.0.0.1:PORT`; stops on SIGINT/SIGTERM.
//   minimal_beast_server [--port N] [--threads T]
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

const std::string kBody = "{\"ok\":true}\n";

class Session : public std::enable_shared_from_this<Session> {
 public:
  // The same read buffer as servelab's sessions (TransportOptions::read_buffer_bytes), so
  // that the ratio measures servelab's work, not a larger buffer.
  explicit Session(tcp::socket&& s) : stream_(std::move(s)) { buffer_.reserve(16 * 1024); }
  void run() { net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read(); }); }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(64u << 20);
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->close();
      self->write(self->parser_->get().keep_alive());
    });
  }
  void write(bool keep_alive) {
    res_ = {};
    res_.result(http::status::ok);
    res_.version(11);
    res_.set(http::field::content_type, "application/json");
    res_.body() = kBody;
    res_.keep_alive(keep_alive);
    res_.prepare_payload();
    http::async_write(stream_, res_, [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
      if (ec || !keep_alive) return self->close();
      self->read();
    });
  }
  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
};

void accept(tcp::acceptor& acceptor, net::io_context& ioc) {
  acceptor.async_accept(net::make_strand(ioc), [&](beast::error_code ec, tcp::socket s) {
    if (!acceptor.is_open()) return;
    if (!ec) {
      s.set_option(tcp::no_delay(true), ec);
      std::make_shared<Session>(std::move(s))->run();
    }
    accept(acceptor, ioc);
  });
}

}  // namespace

int main(int argc, char** argv) {
  unsigned short port = 0;
  int threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--port")) port = static_cast<unsigned short>(std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--threads")) threads = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: minimal_beast_server [--port N] [--threads T]\n");
      return 2;
    }
  }
  net::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  std::printf("listening on 127.0.0.1:%u\n", unsigned(acceptor.local_endpoint().port()));
  std::fflush(stdout);
  accept(acceptor, ioc);
  net::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](beast::error_code, int) { ioc.stop(); });
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([&] { ioc.run(); });
  ioc.run();
  for (auto& t : pool) t.join();
  return 0;
}
