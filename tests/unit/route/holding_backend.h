// A real TCP peer on 127.0.0.1 for the front end's fault tests: it answers GET /health with
// 200 (unless silent) and holds every other request open without answering, as a backend
// that hangs does. Counts the requests it held. Stops (closing every socket) when destroyed.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace servelab::testing {

class HoldingBackend {
 public:
  // `silent`: answers nothing at all, /health included. `answer_first`: the first that many
  // requests other than /health are answered 200 `{}` on their keep-alive connection (their
  // Content-Length bodies read), the later ones held.
  explicit HoldingBackend(bool silent = false, int answer_first = 0);
  ~HoldingBackend();
  uint16_t port() const { return port_; }
  int held() const { return held_.load(); }  // requests received and never answered

 private:
  void accept_loop();
  void serve(int fd);

  bool silent_;
  int answer_first_;
  std::atomic<int> answered_{0};
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> held_{0};
  std::mutex mu_;
  std::vector<int> open_fds_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

// A port on 127.0.0.1 where nothing listens (bound once, then closed).
uint16_t closed_port();

}  // namespace servelab::testing
