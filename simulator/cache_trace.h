// What one simulated server's executing tier saw, for the offline optimum of its cache
// (results/offline_cache.h): the models of the batches it ran, in the order they ran (each
// needs its model resident then), the models it held at the start, and the loads into it.
// Owned by its Server; single-threaded like the simulation.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/control/types.h"

namespace servelab::sim {

struct CacheTrace {
  std::vector<uint32_t> accesses;  // a run of batches of one model is kept once: its
                                   // repeats are hits under any policy
  std::vector<uint32_t> initial;   // resident in the executing tier before the run
  uint64_t loads = 0;              // loads into the executing tier

  void access(ModelId m) {
    if (accesses.empty() || accesses.back() != m) accesses.push_back(m);
  }
};

}  // namespace servelab::sim
