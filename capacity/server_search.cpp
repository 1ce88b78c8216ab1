#include "capacity/server_search.h"

#include <cmath>

namespace servelab::capacity {
namespace {

// Runs one trial and records it in `r`; returns whether it was valid.
bool run_trial(const std::function<RunOutcome(double)>& trial, double rate, SearchResult& r) {
  SearchStep step{rate, trial(rate)};
  r.queries += step.outcome.queries;
  const bool valid = step.outcome.valid();
  if (valid && rate > r.best_rate) {
    r.best_rate = rate;
    r.best = step.outcome;
  }
  if (!valid && (r.lowest_invalid == 0 || rate < r.lowest_invalid)) r.lowest_invalid = rate;
  r.steps.push_back(std::move(step));
  return valid;
}

bool bracketed(const SearchResult& r) { return r.best_rate > 0 && r.lowest_invalid > 0; }

}  // namespace

SearchResult search_server_rate(const ScenarioSettings& s,
                                const std::function<RunOutcome(double rate)>& trial) {
  const int max_trials = s.max_trials;
  validate(s);
  SearchResult r;
  // Bracket: double after a valid run, halve after an invalid one.
  double rate = s.start_rate;
  for (int i = 0; i < max_trials && !bracketed(r); ++i) {
    const bool valid = run_trial(trial, rate, r);
    rate = valid ? rate * 2 : rate / 2;
    if (rate < s.min_rate) break;  // nothing is valid at any rate worth a run
  }
  // Bisect the bracket geometrically until it is within the precision.
  while (bracketed(r) && static_cast<int>(r.steps.size()) < max_trials &&
         r.lowest_invalid / r.best_rate - 1 > s.search_precision) {
    const double mid = std::sqrt(r.best_rate * r.lowest_invalid);
    run_trial(trial, mid, r);
  }
  return r;
}

}  // namespace servelab::capacity
