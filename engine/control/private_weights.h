// engine.weights: private (TrIMS's no-sharing baseline): every batch loads its own copy, so
// the controller must never load or evict. Shared by the engine and the simulator, which
// each check their config with it.
#pragma once

#include <cstdint>
#include <string>

#include "engine/control/controller.h"

namespace servelab {

// Throws ConfigError naming the first tier up to `c.exec_tier` that has a budget.
inline void check_private_weights_tiers(const ControllerConfig& c) {
  for (int t = int(Tier::Host); t <= int(c.exec_tier); ++t) {
    const TierBudget& b = c.budgets[t];
    if (!b.unlimited())
      throw ConfigError(std::string("engine.tiers.") + tier_name(Tier(t)) +
                        ": a budget; with private weights every batch loads its own copy, so "
                        "the tiers up to the executing one must be unlimited");
  }
}

}  // namespace servelab
