// Placement (DLIS's Model Master): which servers of a cluster host which models. A placement
// policy is a function from the models (memory, expected load) and the number of servers to
// each model's hosts, registered by name with a factory as the routers are, so a config picks
// one: `cluster: {servers: 4, placement: {name: replicas-by-load, replicas: 2}}`. Requests
// for a model go only to its hosts. Shared by the simulator's cluster and the real front end.
// No clock, no I/O; deterministic (ties go to the lowest index). Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/control/policy_params.h"

namespace servelab::route {

// What a placement policy knows of one model.
struct PlacedModel {
  std::string name;
  uint64_t bytes = 0;  // its memory on a server
  double load = 1;     // its expected share of the requests (any scale; equal when unknown)
};

// Each model's hosts: server indices, ascending, never empty, each below `servers`.
struct Placement {
  uint32_t servers = 0;
  std::vector<std::vector<uint32_t>> hosts;  // by model index
  bool hosts_model(size_t model, uint32_t server) const;
  bool everywhere() const;  // every model on every server
};

using PlacementFactory = std::function<Placement(const PolicySpec&,
                                                 std::span<const PlacedModel>, uint32_t servers)>;

struct PlacementInfo {
  std::string name;
  std::string help;  // one line: what it does and its parameters
  PlacementFactory place;
  bool reads_load = false;  // uses PlacedModel::load (its caller must count the requests)
};

// The registered policies: everywhere, replicas-by-load, memory-balanced, static.
const std::vector<PlacementInfo>& placements();
std::vector<std::string> placement_names();
// Whether the registered policy `name` reads the models' loads (false for an unknown name).
bool placement_reads_load(const std::string& name);
// The placement `spec` names for `models` on `servers` (>= 1) servers. Throws ConfigError
// naming the known policies (unknown name), the bad parameter, or the unknown model or server
// a static placement names.
Placement make_placement(const PolicySpec& spec, std::span<const PlacedModel> models,
                         uint32_t servers);

}  // namespace servelab::route
