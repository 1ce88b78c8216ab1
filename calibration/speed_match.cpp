#include "calibration/speed_match.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace servelab::experiments {
namespace {

// Where a miss loads from: the tier just below the executing one when it holds every model
// (no budget), else disk.
Tier load_source(const ControllerConfig& c) {
  const int below = static_cast<int>(c.exec_tier) - 1;
  if (below > static_cast<int>(Tier::Disk)) {
    if (c.budgets[below].unlimited()) return static_cast<Tier>(below);
  }
  return Tier::Disk;
}

// One counted request's share of its batch: when the batch was dispatched, and its measured
// and predicted cost times 1/batch_size.
struct Share {
  double at = 0, measured = 0, predicted = 0, batches = 0;
  bool loaded = false;  // the batch waited for a load: its cost holds the load's
};

std::vector<Share> shares(const sim::SimulationSetup& setup, const results::RunRecords& real) {
  const Tier exec = setup.control.exec_tier, from = load_source(setup.control);
  std::vector<Share> out;
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
    out.push_back({r.dispatch, took * share, cost * share, share, r.waited_for_load});
  }
  return out;
}

}  // namespace

double measured_speed_factor(const sim::SimulationSetup& setup, const results::RunRecords& real) {
  double measured = 0, predicted = 0;
  for (const Share& s : shares(setup, real)) {
    measured += s.measured;
    predicted += s.predicted;
  }
  return predicted > 0 ? measured / predicted : std::numeric_limits<double>::quiet_NaN();
}

std::vector<sim::SimulationSetup::SpeedWindow> measured_speed_trace(
    const sim::SimulationSetup& setup, const results::RunRecords& real, double overall,
    double batches_per_window) {
  std::vector<sim::SimulationSetup::SpeedWindow> trace;
  if (!(overall > 0) || !std::isfinite(overall) || !(batches_per_window > 0)) return trace;
  std::vector<Share> all = shares(setup, real);
  std::stable_sort(all.begin(), all.end(), [](const Share& a, const Share& b) { return a.at < b.at; });
  double total = 0;
  for (const Share& s : all) total += s.batches;
  if (total < 2 * batches_per_window) return trace;
  double measured = 0, predicted = 0, batches = 0, seen = 0;
  double from = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (batches == 0 && !trace.empty()) from = all[i].at;
    measured += all[i].measured;
    predicted += all[i].predicted;
    batches += all[i].batches;
    seen += all[i].batches;
    // Close a full window, unless less than half a window would be left over (it joins
    // this one) or the next share belongs to the same batch (dispatched at the same time).
    const bool full = batches >= batches_per_window - 1e-9 &&
                      total - seen >= batches_per_window / 2 &&
                      (i + 1 == all.size() || all[i + 1].at > all[i].at);
    if ((full || i + 1 == all.size()) && predicted > 0) {
      const double t = trace.empty() ? 0.0 : from;
      if (trace.empty() || t > trace.back().from)
        trace.push_back({t, measured / predicted / overall});
      measured = predicted = batches = 0;
    }
  }
  return trace;
}

double measured_jitter(const sim::SimulationSetup& setup, const results::RunRecords& real,
                       double overall,
                       const std::vector<sim::SimulationSetup::SpeedWindow>& trace) {
  if (!(overall > 0) || !std::isfinite(overall) || trace.empty())
    return std::numeric_limits<double>::quiet_NaN();
  double w = 0, sum = 0, sq = 0;
  for (const Share& s : shares(setup, real)) {
    if (s.loaded || !(s.predicted > 0)) continue;
    const double x = s.measured / s.predicted / (overall * sim::speed_at(trace, s.at));
    w += s.batches;
    sum += s.batches * x;
    sq += s.batches * x * x;
  }
  if (!(w > 1)) return std::numeric_limits<double>::quiet_NaN();
  const double mean = sum / w;
  return std::sqrt(std::max(0.0, sq / w - mean * mean));
}

}  // namespace servelab::experiments
