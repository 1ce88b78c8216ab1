// Elapsed wall time for measurements (profiler, benches, tests): the steady clock, never the
// system one, so that a clock adjustment cannot bend a timing. Header-only, no state.
#pragma once

#include <chrono>

namespace servelab {

// Seconds from `t0` to now on the steady clock.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace servelab
