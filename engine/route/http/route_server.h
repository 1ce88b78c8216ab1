// `servelab route`'s HTTP front end: the engine's transport (engine/server/http_transport.h)
// and route table in front of a Forwarder.
//   POST /classify/{name}                                forwarded to a backend
//   POST /v2/models/{name}[/versions/{version}]/infer    forwarded to a backend
//   GET  /health      {"status": "ok", "backends_up": n, "backends": N}
//   GET  /backends    each backend: address, up, outstanding, forwarded, answered
//   GET  /metrics     Prometheus text: the forwarder's counters and the HTTP counters
// Every other path is 404, every error JSON {"error": "..."}.
// Thread-safety: construct, start(), stop() and destroy from one owning thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/route/http/forwarder.h"

namespace servelab::route {

struct RouteServerOptions {
  std::string bind = "127.0.0.1";  // listen address (loopback by default)
  uint16_t port = 0;               // 0: a free port, read with port()
  unsigned io_threads = 1;  // they run the forwarder too (on its strand)
  size_t max_body_bytes = 256u << 20;  // a larger request body is answered 413
  ForwarderOptions forwarder;
};

class RouteServer {
 public:
  // Throws as Forwarder's constructor does.
  explicit RouteServer(RouteServerOptions options);
  ~RouteServer();  // stop()s
  RouteServer(const RouteServer&) = delete;
  RouteServer& operator=(const RouteServer&) = delete;

  // Probes the backends (Forwarder::start: returns those down, with why), then binds and
  // serves. Throws std::runtime_error when the address cannot be bound.
  std::vector<std::pair<std::string, std::string>> start();
  uint16_t port() const;
  // Stops the forwarder (held requests answered 503), then the transport. Idempotent.
  void stop();
  // Its forwarder, for what it keeps beyond HTTP (copy_rows). Any thread.
  Forwarder& forwarder();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace servelab::route
