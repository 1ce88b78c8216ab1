// The profiler's phases in the order measure_profile runs them, each with the seconds its
// options plan for it: a progress bar gets its total, and so an ETA, before anything is
// measured; the bar's ETA then corrects itself by the time the phases really take.
// Threading: measure_profile runs its phases one at a time, some on a thread of its own; a
// ProfilePhases and its callback are used by one of them at a time.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "calibration/profiler.h"

namespace servelab::experiments {

struct ProfilePhase {
  std::string what;           // "squeezenet1_1: batches and loads", "cold bursts", ...
  double planned_seconds = 0;
};

// Every phase measure_profile(o) will run, in order; phases that `o` switches off are absent.
std::vector<ProfilePhase> plan_profile(const ProfileOptions& o);

// Walks measure_profile through its plan. next(what) says the phase `what` starts; it must be
// the plan's next one (std::logic_error otherwise: the plan and the profiler disagree, and
// every ETA after it would be wrong).
class ProfilePhases {
 public:
  ProfilePhases(std::vector<ProfilePhase> plan, ProfilePhaseStarted started);
  void next(const std::string& what);
  void finish();  // all done: throws std::logic_error when a planned phase did not run

 private:
  std::vector<ProfilePhase> plan_;
  ProfilePhaseStarted started_;
  size_t next_ = 0;
};

}  // namespace servelab::experiments
