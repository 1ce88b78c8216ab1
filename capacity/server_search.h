// The Server scenario's metric: the highest Poisson rate whose runs are valid (scenario.h),
// found by growing or shrinking the rate by 2x from a start until one valid and one invalid
// rate bracket the answer, then bisecting (geometrically) until they are within the asked
// precision. Assumes validity falls with the rate; a run's noise can break that near the
// edge, and the answer is then the highest rate seen valid below the lowest seen invalid.
// Not thread-safe: one search per thread; `trial` runs one run at a rate.
#pragma once

#include <functional>
#include <vector>

#include "capacity/scenario.h"

namespace servelab::capacity {

struct SearchStep {
  double rate = 0;
  RunOutcome outcome;
};

struct SearchResult {
  double best_rate = 0;        // the highest valid rate; 0 when none was found
  RunOutcome best;             // its run
  double lowest_invalid = 0;   // the bracket's top; 0 when no run was invalid
  std::vector<SearchStep> steps;
  uint64_t queries = 0;        // every trial's queries together
};

// At most s.max_trials runs, none below s.min_rate. Throws std::invalid_argument on bad
// settings.
SearchResult search_server_rate(const ScenarioSettings& s,
                                const std::function<RunOutcome(double rate)>& trial);

}  // namespace servelab::capacity
