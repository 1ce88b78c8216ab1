// The simulated machine's costs (machine_model.h).
#include "calibration/terms/machine_model.h"

#include <algorithm>
#include <cmath>

#include "engine/control/draws.h"

namespace servelab {

double speed_factor_at(const std::vector<SpeedWindow>& trace, Time t) {
  if (trace.empty() || t < trace.front().from) return 1;
  auto it = std::upper_bound(trace.begin(), trace.end(), t,
                             [](Time x, const SpeedWindow& w) { return x < w.from; });
  return std::prev(it)->factor;
}

MachineModel::MachineModel(const MachineTerms& terms, uint64_t seed)
    : terms_(terms), rng_(seed), load_rng_(seed ^ 0x9e3779b97f4a7c15ULL) {
  // A real run's speeds (a speed trace or jitter) replace the profile's own.
  const bool profile_speeds =
      terms_.jitter < 0 && (!terms_.speed_trace || terms_.speed_trace->empty());
  if (terms_.speed_drift && terms_.speed_drift->on() && terms_.noise != CostNoise::None &&
      profile_speeds)
    course_.emplace(*terms_.speed_drift, seed ^ 0x5851f42d4c957f2dULL);
  if (terms_.idle_slowdown && terms_.idle_slowdown->on() && profile_speeds)
    idle_slowdown_ = terms_.idle_slowdown;
  served_terms_ = profile_speeds;
  const size_t models = terms_.profiles.size();
  served_miss_next_.assign(models, 0);
  served_idle_ratio_.assign(models, 0);
  served_sample_scale_.assign(models, 0);
  for (ModelId m = 0; m < models; ++m) {
    const RequestOverhead& o = *terms_.overheads[m];
    const double one = terms_.profiles[m]->batch_latency(1);
    if (o.served_idle_batch > 0 && one > 0) served_idle_ratio_[m] = o.served_idle_batch / one;
    const std::vector<double>& xs = o.served_miss_load_samples;
    double sum = 0;
    for (double x : xs) sum += x;
    if (terms_.noise != CostNoise::None && sum > 0)
      served_sample_scale_[m] = o.served_miss_load / (sum / double(xs.size()));
  }
}

double MachineModel::speed_at(Time t) const {
  return terms_.speed_trace ? speed_factor_at(*terms_.speed_trace, t) : 1;
}

// The drawn cost as served: the first batch after a served miss costs the measured served
// first batch's extra over a warm batch of 1 (it holds the fresh module's first-run cost and
// the machine's state); one whose worker idled while the server held no request, the idle
// slowdown; any other, the served extra where it applies.
Time MachineModel::batch_cost(ModelId model, uint32_t size, Time now, Time idle_since,
                              bool emptied_while_idle) {
  Time cost = profile_batch_cost(model, size, now);
  const RequestOverhead& o = *terms_.overheads[model];
  if (served_miss_next_[model]) {
    served_miss_next_[model] = 0;
    return cost + std::max(0.0, o.served_miss_batch - terms_.profiles[model]->batch_latency(1));
  }
  if (idle_slowdown_ && emptied_while_idle) {
    // A measured served batch was served: it holds the served extra already.
    if (served_idle_ratio_[model] > 0) return cost * idle_factor(model, now - idle_since);
    cost *= idle_slowdown_->factor_after(now - idle_since);
  }
  if (served_terms_) cost += o.served_extra;
  return cost;
}

// After `idle` seconds: the measured served batch's ratio to the profile's, reached as the
// profile's slowdown ramps with the gap.
double MachineModel::idle_factor(ModelId model, Time idle) const {
  return 1.0 + (served_idle_ratio_[model] - 1.0) * idle_slowdown_->share_after(idle);
}

// A draw from the profile: at the speed course's score where there is one, else independent
// (the profile's noise, or a real run's jitter), times the speed trace's factor.
Time MachineModel::profile_batch_cost(ModelId model, uint32_t size, Time now) {
  const ModelProfile& p = *terms_.profiles[model];
  if (course_) return course_->cost(p, size, terms_.noise, course_->score_at(now));
  const bool jittered = terms_.jitter >= 0 && terms_.noise != CostNoise::None;
  const double cost = jittered ? p.sample_batch_latency(size, terms_.jitter, rng_)
                               : p.sample_batch_latency(size, terms_.noise, rng_);
  return cost * speed_at(now);
}

Time MachineModel::evict_cost(ModelId model, Tier tier, Time now) const {
  const double cost = terms_.profiles[model]->evict_time[int(tier)];
  return cost <= 0 ? 0 : cost * speed_at(now);
}

// A draw from the profile's loads. A miss into the executing tier served from an empty
// server waits the measured served time instead, from `now` (it holds the eviction the loader
// may be doing until `start`), scaled by the draw over the profile's mean to keep its spread.
Time MachineModel::load_cost(const LoadAction& l, Time now, Time start, bool from_empty) {
  const ModelProfile& p = *terms_.profiles[l.model];
  const Time draw = p.sample_load_seconds(l.from, l.to, terms_.noise, load_rng_);
  const RequestOverhead& o = *terms_.overheads[l.model];
  const bool served =
      served_terms_ && o.served_miss_load > 0 && l.to == terms_.exec_tier && from_empty;
  if (!served) return draw * speed_at(now);
  served_miss_next_[l.model] = 1;
  return std::max(0.0, now + served_wait(l, draw) - start);
}

// A served miss's wait for its eviction and load: one of its measured waits at the served
// mean's level where the profile recorded them (their spread), else the served mean scaled by
// the load draw over the profile's mean (the back-to-back loads' spread).
Time MachineModel::served_wait(const LoadAction& l, Time draw) {
  const RequestOverhead& o = *terms_.overheads[l.model];
  if (served_sample_scale_[l.model] > 0) {
    const std::vector<double>& xs = o.served_miss_load_samples;
    const size_t i = std::min(xs.size() - 1, size_t(uniform01(load_rng_) * double(xs.size())));
    return xs[i] * served_sample_scale_[l.model];
  }
  const double mean = terms_.profiles[l.model]->load_seconds(l.from, l.to);
  return mean > 0 ? o.served_miss_load * draw / mean : o.served_miss_load;
}

}  // namespace servelab
