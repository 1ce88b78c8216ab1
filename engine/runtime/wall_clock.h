// The engine's wall clock: steady_clock seconds since the engine started. Only the runtime
// reads it; the controller receives the values as event times. Thread-safe (immutable).
#pragma once

#include <chrono>

#include "engine/control/types.h"

namespace servelab::runtime {

class WallClock {
 public:
  using clock = std::chrono::steady_clock;
  WallClock() : start_(clock::now()) {}
  Time now() const { return std::chrono::duration<double>(clock::now() - start_).count(); }
  // The steady_clock time point of engine time `t`, capped one hour from now (kNever included).
  clock::time_point at(Time t) const {
    auto cap = clock::now() + std::chrono::hours(1);
    if (!(t < now() + 3600.0)) return cap;
    return start_ + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(t));
  }

 private:
  clock::time_point start_;
};

}  // namespace servelab::runtime
