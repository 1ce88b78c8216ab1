// What a server's executing tier saw, for the offline optimum of its cache
// (results/offline_cache.h): the models of the batches it ran, in the order they were handed
// to workers (each needs its model resident then), the models it held at the start, the loads
// into it, and each model's bytes there. Recorded by a simulated server (simulator/server.h)
// and by the engine (Engine::start_cache_trace); a value type, owned by whoever records it.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/control/controller.h"
#include "engine/control/types.h"

namespace servelab {

struct CacheTrace {
  Tier tier = Tier::Host;          // the executing tier
  TierBudget room{};               // its limits
  std::vector<uint32_t> accesses;  // a run of batches of one model is kept once: its
                                   // repeats are hits under any policy
  std::vector<uint32_t> initial;   // resident in the executing tier before the run
  uint64_t loads = 0;              // loads into the executing tier
  std::vector<uint64_t> sizes;     // by ModelId: its bytes in the tier (the engine's trace)

  void access(ModelId m) {
    if (accesses.empty() || accesses.back() != m) accesses.push_back(m);
  }
};

}  // namespace servelab
