#include "tests/unit/route/holding_backend.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <stdexcept>
#include <string>

namespace servelab::testing {

namespace {

int listen_loopback(uint16_t* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0)
    throw std::runtime_error("bind/listen failed");
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

}  // namespace

uint16_t closed_port() {
  uint16_t port = 0;
  ::close(listen_loopback(&port));
  return port;
}

HoldingBackend::HoldingBackend(bool silent, int answer_first)
    : silent_(silent), answer_first_(answer_first) {
  listen_fd_ = listen_loopback(&port_);
  acceptor_ = std::thread([this] { accept_loop(); });
}

HoldingBackend::~HoldingBackend() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& t : threads_) t.join();
  for (int fd : open_fds_) ::close(fd);
}

void HoldingBackend::accept_loop() {
  while (!stopping_) {
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.push_back(fd);
    threads_.emplace_back([this, fd] { serve(fd); });
  }
}

namespace {

// The Content-Length of a request's head (lower-case name, as the front end writes it), or 0.
size_t content_length(std::string head) {
  for (char& c : head) c = char(std::tolower(static_cast<unsigned char>(c)));
  const size_t at = head.find("\r\ncontent-length:");
  return at == std::string::npos ? 0 : std::stoul(head.substr(at + 17));
}

}  // namespace

// Reads requests (a held one's head only; the tests' requests to hold have small bodies) until
// the peer or the test closes the socket.
void HoldingBackend::serve(int fd) {
  std::string in;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    in.append(buf, size_t(n));
    const size_t end = in.find("\r\n\r\n");
    if (end == std::string::npos) continue;
    const bool health = in.rfind("GET /health", 0) == 0;
    if (!health && answered_ < answer_first_) {  // answer it once its body is in
      const size_t whole = end + 4 + content_length(in.substr(0, end + 2));
      if (in.size() < whole) continue;
      in.erase(0, whole);
      ++answered_;
      const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        "Content-Length: 2\r\n\r\n{}";
      (void)::send(fd, ok, sizeof ok - 1, MSG_NOSIGNAL);
      continue;
    }
    in.erase(0, end + 4);
    if (health && !silent_) {
      const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
      (void)::send(fd, ok, sizeof ok - 1, MSG_NOSIGNAL);
      ::shutdown(fd, SHUT_WR);
      continue;
    }
    ++held_;  // never answered
  }
}

}  // namespace servelab::testing
