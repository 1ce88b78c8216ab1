// The simulated machine's costs (machine_model.h).
#include "calibration/terms/machine_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "engine/control/draws.h"

namespace servelab {

double speed_factor_at(const std::vector<SpeedWindow>& trace, Time t) {
  if (trace.empty() || t < trace.front().from) return 1;
  auto it = std::upper_bound(trace.begin(), trace.end(), t,
                             [](Time x, const SpeedWindow& w) { return x < w.from; });
  return std::prev(it)->factor;
}

MachineTables::MachineTables(MachineTerms t) : terms(std::move(t)) {
  models.resize(terms.profiles.size());
  for (ModelId m = 0; m < models.size(); ++m) {
    ModelTerms& mt = models[m];
    mt.profile = terms.profiles[m];
    mt.overhead = terms.overheads[m];
    const RequestOverhead& o = *mt.overhead;
    mt.served_miss = o.served_miss_load > 0;
    const double one = mt.profile->batch_latency(1);
    if (o.served_idle_batch > 0 && one > 0) mt.served_idle_ratio = o.served_idle_batch / one;
    const std::vector<double>& xs = o.served_miss_load_samples;
    double sum = 0;
    for (double x : xs) sum += x;
    if (terms.noise != CostNoise::None && sum > 0)
      mt.served_sample_scale = o.served_miss_load / (sum / double(xs.size()));
  }
}

MachineModel::MachineModel(std::shared_ptr<const MachineTables> tables, uint64_t seed)
    : tables_(std::move(tables)), rng_(seed), load_rng_(seed ^ 0x9e3779b97f4a7c15ULL) {
  // A real run's speeds (a speed trace or jitter) replace the profile's own.
  const bool profile_speeds =
      tables_->terms.jitter < 0 && (!tables_->terms.speed_trace || tables_->terms.speed_trace->empty());
  if (tables_->terms.speed_drift && tables_->terms.speed_drift->on() && tables_->terms.noise != CostNoise::None &&
      profile_speeds)
    course_.emplace(*tables_->terms.speed_drift, seed ^ 0x5851f42d4c957f2dULL);
  if (tables_->terms.idle_slowdown && tables_->terms.idle_slowdown->on() && profile_speeds)
    idle_slowdown_ = tables_->terms.idle_slowdown;
  served_terms_ = profile_speeds;
  served_miss_next_.assign(tables_->models.size(), 0);
}

double MachineModel::speed_at(Time t) const {
  return tables_->terms.speed_trace ? speed_factor_at(*tables_->terms.speed_trace, t) : 1;
}

// The drawn cost as served: the first batch after a served miss costs the measured served
// first batch's extra over a warm batch of 1 (it holds the fresh module's first-run cost and
// the machine's state); one whose worker idled while the server held no request, the idle
// slowdown; any other, the served extra where it applies.
Time MachineModel::batch_cost(ModelId model, uint32_t size, Time now, Time idle_since,
                              bool emptied_while_idle) {
  Time cost = profile_batch_cost(model, size, now);
  const ModelTerms& mt = tables_->models[model];
  const RequestOverhead& o = *mt.overhead;
  if (mt.served_miss && served_miss_next_[model]) {
    served_miss_next_[model] = 0;
    return cost + std::max(0.0, o.served_miss_batch - mt.profile->batch_latency(1));
  }
  if (idle_slowdown_ && emptied_while_idle) {
    // A measured served batch was served: it holds the served extra already.
    if (mt.served_idle_ratio > 0) return cost * idle_factor(model, now - idle_since);
    cost *= idle_slowdown_->factor_after(now - idle_since);
  }
  if (served_terms_) cost += o.served_extra;
  return cost;
}

// After `idle` seconds: the measured served batch's ratio to the profile's, reached as the
// profile's slowdown ramps with the gap.
double MachineModel::idle_factor(ModelId model, Time idle) const {
  return 1.0 + (tables_->models[model].served_idle_ratio - 1.0) * idle_slowdown_->share_after(idle);
}

// A draw from the profile: at the speed course's score where there is one, else independent
// (the profile's noise, or a real run's jitter), times the speed trace's factor.
Time MachineModel::profile_batch_cost(ModelId model, uint32_t size, Time now) {
  const ModelProfile& p = *tables_->models[model].profile;
  if (course_) return course_->cost(p, size, tables_->terms.noise, course_->score_at(now));
  const bool jittered = tables_->terms.jitter >= 0 && tables_->terms.noise != CostNoise::None;
  const double cost = jittered ? p.sample_batch_latency(size, tables_->terms.jitter, rng_)
                               : p.sample_batch_latency(size, tables_->terms.noise, rng_);
  return cost * speed_at(now);
}

Time MachineModel::evict_cost(ModelId model, Tier tier, Time now) const {
  const double cost = tables_->models[model].profile->evict_time[int(tier)];
  return cost <= 0 ? 0 : cost * speed_at(now);
}

// A draw from the profile's loads. A miss into the executing tier served from an empty
// server waits the measured served time instead, from `now` (it holds the eviction the loader
// may be doing until `start`), scaled by the draw over the profile's mean to keep its spread.
Time MachineModel::load_cost(const LoadAction& l, Time now, Time start, bool from_empty) {
  const ModelProfile& p = *tables_->models[l.model].profile;
  const Time draw = p.sample_load_seconds(l.from, l.to, tables_->terms.noise, load_rng_);
  const RequestOverhead& o = *tables_->models[l.model].overhead;
  const bool served =
      served_terms_ && o.served_miss_load > 0 && l.to == tables_->terms.exec_tier && from_empty;
  if (!served) return draw * speed_at(now);
  served_miss_next_[l.model] = 1;
  return std::max(0.0, now + served_wait(l, draw) - start);
}

// A served miss's wait for its eviction and load: one of its measured waits at the served
// mean's level where the profile recorded them (their spread), else the served mean scaled by
// the load draw over the profile's mean (the back-to-back loads' spread).
Time MachineModel::served_wait(const LoadAction& l, Time draw) {
  const RequestOverhead& o = *tables_->models[l.model].overhead;
  const double sample_scale = tables_->models[l.model].served_sample_scale;
  if (sample_scale > 0) {
    const std::vector<double>& xs = o.served_miss_load_samples;
    const size_t i = std::min(xs.size() - 1, size_t(uniform01(load_rng_) * double(xs.size())));
    return xs[i] * sample_scale;
  }
  const double mean = tables_->models[l.model].profile->load_seconds(l.from, l.to);
  return mean > 0 ? o.served_miss_load * draw / mean : o.served_miss_load;
}

}  // namespace servelab
