// A minimal asynchronous HTTP/1.1 server for load generator tests: binds 127.0.0.1 on an
// ephemeral port, answers every request after a fixed delay (requests overlap; one thread),
// keeps connections alive, and records what it saw. The status depends on the last path
// segment: "busy" 503, "late" 504, "broken" 500, anything else 200. Runs on its own thread;
// the destructor stops and joins it. Accessors are safe from any thread.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace servelab::loadgen::test {

class FixedDelayServer {
 public:
  // `close_after` > 0: the server closes each connection after that many responses.
  explicit FixedDelayServer(double delay_s, unsigned close_after = 0);
  ~FixedDelayServer();
  FixedDelayServer(const FixedDelayServer&) = delete;
  FixedDelayServer& operator=(const FixedDelayServer&) = delete;

  std::string url() const;
  uint64_t requests() const;
  uint64_t connections() const;
  uint32_t max_in_flight() const;
  std::vector<std::string> targets() const;  // request targets in arrival order
  std::vector<double> receive_times() const; // seconds since the server started
  std::vector<size_t> body_sizes() const;
  std::vector<std::string> slo_headers() const;  // each request's X-SLO-Ms, "" when absent

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace servelab::loadgen::test
