// A reverse proxy users already run, as a real cluster's front end (`cluster.front: nginx` or
// `haproxy`, docs/cluster.md): Debian's nginx with `least_conn` or HAProxy with `leastconn`,
// keep-alive to the servers, forwarding `/classify/...` and `/v2/...` to the servers on
// loopback (every other path: 404). It runs as a child process (experiments/child_process.h:
// killed by the kernel when the starting thread ends) on a loopback port found free just
// before it starts, with its config and logs in the run's folder as front-<kind>.*.
// Not thread-safe: construct, use and destroy on one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace servelab::experiments {

struct ProxyFrontOptions {
  std::string kind;               // "nginx" or "haproxy"
  std::vector<uint16_t> servers;  // the servers' ports on 127.0.0.1
  std::string run_dir;            // its config, temporary files and logs
  std::string search_path;        // where the program is looked for: colon-separated folders
};

// Where `kind`'s program is looked for by default: $PATH, then /usr/sbin and /sbin (Debian
// installs nginx and haproxy there, outside a user's PATH).
std::string default_proxy_search_path();

// The path of `kind`'s program in `search_path`; throws ExperimentError naming the Debian
// package that installs it when there is none, or when `kind` is not nginx or haproxy.
std::string find_proxy(const std::string& kind, const std::string& search_path);

class ProxyFront {
 public:
  // Writes its config, starts it (on another free port when the one chosen was taken in
  // between, up to 5 tries) and waits until it answers its own probe path (60 s). Throws
  // ExperimentError with the end of its stderr when it exits or does not answer; it is
  // stopped then.
  explicit ProxyFront(const ProxyFrontOptions& o);
  ~ProxyFront();  // stops it (SIGTERM, then SIGKILL after 10 s)
  ProxyFront(const ProxyFront&) = delete;
  ProxyFront& operator=(const ProxyFront&) = delete;

  uint16_t port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

}  // namespace servelab::experiments
