// A machine's speed over time as a real run saw it (--match-speed: calibration/speed_match.h):
// from each window's `from` on, batch and load costs drawn from the profile are multiplied by
// its `factor`, until the next window's `from`. Written as simulation.speed_trace. Values;
// thread-compatible.
#pragma once

#include <vector>

#include "engine/control/types.h"

namespace servelab {

struct SpeedWindow {
  Time from = 0;
  double factor = 1;
};

// The factor of `trace` (sorted by `from`) at time t: its last window starting at or before t
// (1 before the first, and for an empty trace).
double speed_factor_at(const std::vector<SpeedWindow>& trace, Time t);

}  // namespace servelab
