// A worker that idles between batches runs its next batch slower on some machines: its caches
// and the core's clocks cool while it sleeps, and a vCPU may be handed to another tenant.
// The profiler measures it on the served path (one
// request in flight, sustained, against as long back to back: calibration/served_probe.h) or
// with short blocks after sleeps; the simulator scales a batch that starts after its worker
// idled through a moment when the server held no request. A machine-fitting term: it lives
// here, never in engine/control.
#pragma once

#include <vector>

namespace servelab {

struct IdleSlowdown {
  // The cost of a batch after an idle gap over its cost back to back, at a measured gap.
  struct Point {
    double gap = 0;     // seconds the worker idled before the batch
    double factor = 1;  // cost ratio, > 0
  };
  std::vector<Point> points;  // gaps ascending and positive; empty: none measured

  bool on() const { return !points.empty(); }
  // The factor after `idle_s` seconds idle: 1 at no gap, linear in the gap between 0 and the
  // measured points, the last point's factor beyond the last gap.
  double factor_after(double idle_s) const;
  // How much of the full slowdown `idle_s` seconds idle bring, in [0, 1]: the factors' own
  // course, (factor_after(idle_s) - 1) / (last factor - 1), so a slowdown measured to set in
  // at short gaps does so here too (with one point: linear in the gap up to it); 1 beyond the
  // last gap, 0 when none is measured, linear in the gap when the last factor is not above 1.
  // Scales a measured served cost (RequestOverhead::served_idle_batch) as the factors scale
  // the profile's.
  double share_after(double idle_s) const;
  // Throws ConfigError unless the gaps ascend from above 0 and every factor is in (0, 10].
  void validate() const;
};

// One measured block of batches of one: each started after `asked` seconds idle (0: back to
// back), `gap` the mean idle time measured before them (the sleep overshoots), `mean_cost`
// their mean cost.
struct IdleBlock {
  double asked = 0;
  double gap = 0;
  double mean_cost = 0;
};

// The points from alternating blocks: for each asked gap > 0, the mean of its blocks' costs
// over the mean of the back-to-back blocks' costs (blocks alternate, so both see the same
// drift), at the mean of its blocks' measured gaps; sorted by gap. None without back-to-back
// blocks.
IdleSlowdown fit_idle_slowdown(const std::vector<IdleBlock>& blocks);

}  // namespace servelab
