#include "experiments/speed_match.h"

#include <cmath>
#include <limits>

namespace servelab::experiments {
namespace {

// Where a miss loads from: the tier just below the executing one when it holds every model
// (no budget), else disk.
Tier load_source(const ControllerConfig& c) {
  const int below = static_cast<int>(c.exec_tier) - 1;
  if (below > static_cast<int>(Tier::Disk)) {
    const TierBudget& b = c.budgets[below];
    if (b.bytes == UINT64_MAX && b.models == UINT32_MAX) return static_cast<Tier>(below);
  }
  return Tier::Disk;
}

}  // namespace

double measured_speed_factor(const sim::SimulationSetup& setup, const results::RunRecords& real) {
  const Tier exec = setup.control.exec_tier, from = load_source(setup.control);
  double measured = 0, predicted = 0;
  for (const results::RequestRecord& r : real.requests) {
    if (r.status != RequestStatus::Ok || r.batch_size == 0 || r.model >= setup.models.size() ||
        !std::isfinite(r.dispatch) || !std::isfinite(r.start) || !std::isfinite(r.finish) ||
        r.finish < r.start || r.start < r.dispatch)
      continue;
    const ModelProfile& p = setup.models[r.model].profile;
    double cost = p.batch_latency(r.batch_size), took = r.finish - r.start;
    if (r.waited_for_load) {
      if (!p.has_load_time(from, exec)) continue;
      cost += p.load_seconds(from, exec);
      took += r.start - r.dispatch;
    }
    const double share = 1.0 / r.batch_size;
    measured += took * share;
    predicted += cost * share;
  }
  return predicted > 0 ? measured / predicted : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace servelab::experiments
