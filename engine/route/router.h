// Routers: which server of a cluster takes a request. A router is a decision function over
// read-only views of the servers, registered by name with a factory (as the policies are), so
// a config picks one: `cluster: {servers: 4, router: {name: power-of-two}}`. The one registry
// serves both bodies: the simulator's cluster (simulator/cluster.h) and the real front end
// (`servelab route`, engine/route/http/). No clock, no I/O: time is a value passed in.
// A router is not thread-safe: its owner calls it from one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/control/policy_params.h"
#include "engine/control/types.h"

namespace servelab::route {

// What a router sees of one server. The front end fills in what it knows: the simulator all
// of it, the real front end `outstanding` (requests it forwarded there and has not had
// answered) and zeros for the rest.
struct ServerView {
  uint32_t index = 0;        // the server's index in its cluster (not in the span routed over)
  uint64_t outstanding = 0;  // requests it holds: queued, in a batch, or on a worker
  uint64_t queued = 0;       // of those, waiting in its controller's queues
  uint32_t free_workers = 0;
};

class Router {
 public:
  virtual ~Router() = default;
  // The index into `servers` (never empty) that takes request `id` of `model` at `now`.
  virtual size_t route(RequestId id, ModelId model, std::span<const ServerView> servers,
                       Time now) = 0;
  // Whether route() reads the views' load (outstanding, queued, free_workers); a router that
  // reads only their number and indices lets its caller skip gathering the load.
  virtual bool reads_load() const { return true; }
};

// A router's maker: the spec's parameters and the router's own random seed.
using RouterFactory = std::function<std::unique_ptr<Router>(const PolicySpec&, uint64_t seed)>;

struct RouterInfo {
  std::string name;
  std::string help;  // one line: what it does and its parameters
  RouterFactory make;
};

// The registered routers: random, round-robin, least-outstanding, power-of-two.
const std::vector<RouterInfo>& routers();
std::vector<std::string> router_names();
// Makes the router `spec` names; throws ConfigError naming the known routers (unknown name)
// or the bad parameter.
std::unique_ptr<Router> make_router(const PolicySpec& spec, uint64_t seed);

}  // namespace servelab::route
