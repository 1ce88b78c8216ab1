// Routers: which server of a cluster takes a request. A router is a decision function over
// read-only views of the servers, registered by name with a factory (as the policies are), so
// a config picks one: `cluster: {servers: 4, router: {name: power-of-two}}`.
// Owned by the cluster; called from the simulation's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/control/policy_params.h"
#include "engine/control/types.h"

namespace servelab::sim {

// What a router sees of one server.
struct ServerView {
  uint32_t index = 0;
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

}  // namespace servelab::sim
