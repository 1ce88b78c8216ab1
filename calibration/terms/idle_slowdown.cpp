#include "calibration/terms/idle_slowdown.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/control/policy_params.h"  // ConfigError

namespace servelab {

double IdleSlowdown::factor_after(double idle_s) const {
  if (points.empty() || !(idle_s > 0)) return 1.0;
  double gap0 = 0, f0 = 1.0;
  for (const Point& p : points) {
    if (idle_s <= p.gap) return f0 + (p.factor - f0) * (idle_s - gap0) / (p.gap - gap0);
    gap0 = p.gap;
    f0 = p.factor;
  }
  return f0;
}

double IdleSlowdown::share_after(double idle_s) const {
  if (points.empty() || !(idle_s > 0)) return 0.0;
  const double full = points.back().factor - 1.0;
  if (!(full > 0)) return std::min(1.0, idle_s / points.back().gap);  // no slowdown to follow
  return std::clamp((factor_after(idle_s) - 1.0) / full, 0.0, 1.0);
}

void IdleSlowdown::validate() const {
  double last = 0;
  for (const Point& p : points) {
    if (!(p.gap > last) || !std::isfinite(p.gap))
      throw ConfigError("idle_slowdown: gaps must ascend from above 0, got " +
                        std::to_string(p.gap * 1e3) + " ms after " + std::to_string(last * 1e3));
    if (!(p.factor > 0 && p.factor <= 10))
      throw ConfigError("idle_slowdown: a factor must be in (0, 10], got " +
                        std::to_string(p.factor));
    last = p.gap;
  }
}

IdleSlowdown fit_idle_slowdown(const std::vector<IdleBlock>& blocks) {
  struct Sum {
    double asked = 0, gap = 0, cost = 0;
    int n = 0;
  };
  Sum back_to_back;
  std::vector<Sum> gaps;  // one per asked gap
  for (const IdleBlock& b : blocks) {
    Sum* s = &back_to_back;
    if (b.asked > 0) {
      auto it = std::find_if(gaps.begin(), gaps.end(),
                             [&](const Sum& g) { return g.asked == b.asked; });
      s = it != gaps.end() ? &*it : &gaps.emplace_back(Sum{b.asked});
    }
    s->gap += b.gap;
    s->cost += b.mean_cost;
    ++s->n;
  }
  IdleSlowdown out;
  if (back_to_back.n == 0 || !(back_to_back.cost > 0)) return out;
  const double base = back_to_back.cost / back_to_back.n;
  for (const Sum& g : gaps) out.points.push_back({g.gap / g.n, g.cost / g.n / base});
  std::sort(out.points.begin(), out.points.end(),
            [](const auto& a, const auto& b) { return a.gap < b.gap; });
  return out;
}

}  // namespace servelab
