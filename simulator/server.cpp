#include "simulator/server.h"

#include <algorithm>
#include <cmath>

#include "engine/control/draws.h"

namespace servelab::sim {

Server::Server(RunContext& ctx, OutcomeSink& sink, uint32_t index, uint64_t seed)
    : ctx_(ctx), sink_(sink), index_(index), ctl_(ctx.setup.control),
      contract_(ctx.setup.control), rng_(seed), load_rng_(seed ^ 0x9e3779b97f4a7c15ULL),
      workers_(ctx.setup.control.workers) {
  const SimulationSetup& s = ctx.setup;
  // No real run's speeds (a speed trace or jitter) replace the profile's own.
  const bool profile_speeds = s.jitter < 0 && s.speed_trace.empty();
  if (s.speed_drift.on() && s.noise != CostNoise::None && profile_speeds)
    course_.emplace(s.speed_drift, seed ^ 0x5851f42d4c957f2dULL);
  if (s.idle_slowdown.on() && profile_speeds) idle_slowdown_ = &s.idle_slowdown;
  served_extra_ = profile_speeds;
  served_miss_next_.assign(s.models.size(), 0);
  served_idle_ratio_.assign(s.models.size(), 0);
  served_sample_scale_.assign(s.models.size(), 0);
  for (ModelId m = 0; m < s.models.size(); ++m) {
    const RequestOverhead& o = s.models[m].overhead;
    const double one = s.models[m].profile.batch_latency(1);
    if (o.served_idle_batch > 0 && one > 0) served_idle_ratio_[m] = o.served_idle_batch / one;
    const std::vector<double>& xs = o.served_miss_load_samples;
    double sum = 0;
    for (double x : xs) sum += x;
    if (s.noise != CostNoise::None && sum > 0)
      served_sample_scale_[m] = o.served_miss_load / (sum / double(xs.size()));
  }
}

// Models are made resident in model order as far as tier budgets allow, every tier up to the
// setup's preload tier (the controller's initial placement, as in the engine).
void Server::add_models() {
  for (ModelId id = 0; id < ctx_.setup.models.size(); ++id) {
    const SimModel& m = ctx_.setup.models[id];
    ModelInfo info{m.name, m.profile.size_bytes, m.contexts, m.max_batch};
    for (int u = int(Tier::Host); u < kTierCount; ++u)  // eviction policies' cost prior
      if (m.profile.has_load_time(Tier(u - 1), Tier(u)))
        info.load_seconds[u] = m.profile.load_seconds(Tier(u - 1), Tier(u));
    info.batch_seconds = m.profile.mean_batch_seconds();  // SLO-aware batching's cost prior
    const Tier placed = ctl_.add_model_where_it_fits(id, info, ctx_.setup.preload_tier);
    contract_.add_model(id, m.name, placed);
  }
}

void Server::arrive(RequestId id, Time now) {
  const std::optional<Time> slo = ctx_.slo_of_request(id);
  Request r{id, ctx_.model_of(id), now, slo ? now + *slo : kNever};
  ++outstanding_;
  ctl_.on_arrival(r, now, actions_.out());
  carry_out(now);
}

void Server::arrive_together(std::span<const Request> requests, Time now) {
  outstanding_ += requests.size();
  ctl_.on_arrivals(requests, now, actions_.out());
  carry_out(now);
}

bool Server::cancel(RequestId id, Time now) {
  bool held = ctl_.cancel(id, ctx_.model_of(id), now, actions_.out());
  carry_out(now);
  return held;
}

void Server::on_batch_done(WorkerId worker, Time now) {
  --ctx_.in_flight;
  Worker& w = workers_[worker];
  w.busy = false;
  w.idle_since = now;
  --busy_workers_;
  contract_.on_batch_done(worker);
  ctl_.on_batch_done(w.batch, true, now, actions_.out());
  carry_out(now);
}

void Server::on_load_done(LoadDone done, Time now) {
  --ctx_.in_flight;
  contract_.on_load_done(done.model, done.to, true);
  ctl_.on_load_done(done.model, done.to, true, now, actions_.out());
  carry_out(now);
}

// Stops the run when only timers could ever happen again (the remaining requests are lost),
// or when the controller keeps asking for a timer at the same instant.
void Server::on_timer(uint64_t generation, Time now) {
  if (generation != timer_gen_) return;  // superseded by an earlier timer
  timer_at_ = kNever;
  if (stalled(now)) {
    ctx_.sim.stop();
    return;
  }
  if (now == last_timer_) {
    if (++same_time_timers_ > 100000) {
      ctx_.violation("controller: next_wakeup() does not move past now=" + std::to_string(now));
      ctx_.sim.stop();
      return;
    }
  } else {
    same_time_timers_ = 0;
  }
  last_timer_ = now;
  ++ctx_.result.timers;
  ctl_.on_timer(now, actions_.out());
  carry_out(now);
}

bool Server::stalled(Time now) const {
  return sink_.quiet() &&
         (sink_.queued() == 0 || now - sink_.last_progress() > ctx_.setup.stall_timeout);
}

void Server::arm_timer(Time now) {
  Time w = ctl_.next_wakeup();
  if (w >= timer_at_) return;  // the pending timer fires first; on_timer early is harmless
  timer_at_ = std::max(w, now);
  ctx_.sim.schedule<&Server::on_timer>(timer_at_, this, ++timer_gen_);
}

// The controller's actions at `now`, carried out as the engine carries them (action_carrier.h).
struct Server::Carrier {
  Server& s;
  Time now;
  void evict(const EvictAction& e) {
    s.occupy_loader(e, now);
    s.ctl_.on_evict_done(e.model, e.tier, now, s.actions_.out());
  }
  void load(const LoadAction& l) { s.load(l, now); }
  void dispatch(const Batch& b, bool contract_ok) {
    if (contract_ok) s.dispatch(b, now);  // refused: dropped, and the violation reported
  }
  void complete(const RequestOutcome& o) { s.complete(o, now); }
};

void Server::carry_out(Time now) {
  Carrier carrier{*this, now};
  actions_.carry_out(contract_, carrier);
  arm_timer(now);
}

// The requests' side of a dispatch (the run owns them; the monitor checks the rest).
void Server::check_requests(const Batch& b) {
  for (const Request& r : b.requests) {
    const RequestId w = ctx_.workload_request_of(r.id);  // a member's group request
    if (!ctx_.window.holds(w) || ctx_.window.state(w) == RunContext::Done)
      ctx_.violation("batch " + std::to_string(b.id) + " carries finished or unknown request " +
                     std::to_string(r.id));
  }
}

void Server::dispatch(const Batch& b, Time now) {
  check_requests(b);
  Worker& w = workers_[b.worker];
  w.busy = true;
  w.batch = b.id;
  w.model = b.model;
  ++busy_workers_;
  ++batches_;
  batched_requests_ += b.requests.size();
  const Time cost = served_batch_cost(b, w, now);
  ++ctx_.in_flight;
  ctx_.sim.schedule<&Server::on_batch_done>(now + cost, this, b.worker);
}

// The drawn cost as served: the first batch after a served miss costs the measured served
// first batch's extra over a warm batch of 1 (it holds the fresh module's first-run cost and
// the machine's state); one whose worker idled while the server held no request, the idle
// slowdown; any other, the served extra where it applies.
Time Server::served_batch_cost(const Batch& b, const Worker& w, Time now) {
  Time cost = batch_cost(b.model, static_cast<uint32_t>(b.requests.size()), now);
  const RequestOverhead& o = ctx_.setup.models[b.model].overhead;
  if (served_miss_next_[b.model]) {
    served_miss_next_[b.model] = 0;
    return cost + std::max(0.0, o.served_miss_batch - ctx_.profile(b.model).batch_latency(1));
  }
  if (idle_slowdown_ && emptied_at_ >= w.idle_since) {
    // A measured served batch was served: it holds the served extra already.
    if (served_idle_ratio_[b.model] > 0) return cost * idle_factor(b.model, now - w.idle_since);
    cost *= idle_slowdown_->factor_after(now - w.idle_since);
  }
  if (served_extra_) cost += o.served_extra;
  return cost;
}

// After `idle` seconds: the measured served batch's ratio to the profile's, reached as the
// profile's slowdown ramps with the gap.
double Server::idle_factor(ModelId model, Time idle) const {
  return 1.0 + (served_idle_ratio_[model] - 1.0) * idle_slowdown_->share_after(idle);
}

// A draw from the profile: at the speed course's score where there is one, else independent
// (the profile's noise, or a real run's jitter), times the speed trace's factor.
Time Server::batch_cost(ModelId model, uint32_t size, Time now) {
  const SimulationSetup& s = ctx_.setup;
  const ModelProfile& p = ctx_.profile(model);
  if (course_) return course_->cost(p, size, s.noise, course_->score_at(now));
  const bool jittered = s.jitter >= 0 && s.noise != CostNoise::None;
  const double cost = jittered ? p.sample_batch_latency(size, s.jitter, rng_)
                               : p.sample_batch_latency(size, s.noise, rng_);
  return cost * s.speed_at(now);
}

// The loader is one FIFO server, as the engine's loader thread is: a costed eviction (the
// engine frees the victim there) and a load each hold it, and each starts when the jobs
// posted before it are done. The controller counts an eviction's space as free at once, as
// the engine's does.
void Server::occupy_loader(const EvictAction& e, Time now) {
  const double cost = ctx_.profile(e.model).evict_time[int(e.tier)];
  if (cost <= 0) return;
  loader_busy_until_ = std::max(now, loader_busy_until_) + cost * ctx_.setup.speed_at(now);
}

void Server::load(const LoadAction& l, Time now) {
  ++ctx_.in_flight;
  const Time start = std::max(now, loader_busy_until_);
  loader_busy_until_ = loader_idle_since_ = start + load_cost(l, now, start);
  ctx_.sim.schedule<&Server::on_load_done>(loader_busy_until_, this, LoadDone{l.model, l.to});
}

// A draw from the profile's loads. A miss into the executing tier served from an empty
// server waits the measured served time instead, from `now` (it holds the eviction the loader
// may be doing until `start`), scaled by the draw over the profile's mean to keep its spread.
Time Server::load_cost(const LoadAction& l, Time now, Time start) {
  const ModelProfile& p = ctx_.profile(l.model);
  const Time draw = p.sample_load_seconds(l.from, l.to, ctx_.setup.noise, load_rng_);
  const RequestOverhead& o = ctx_.setup.models[l.model].overhead;
  const bool served = served_extra_ && o.served_miss_load > 0 &&
                      l.to == ctx_.setup.control.exec_tier && emptied_at_ >= loader_idle_since_;
  if (!served) return draw * ctx_.setup.speed_at(now);
  served_miss_next_[l.model] = 1;
  return std::max(0.0, now + served_wait(l, draw) - start);
}

// A served miss's wait for its eviction and load: one of its measured waits at the served
// mean's level where the profile recorded them (their spread), else the served mean scaled by
// the load draw over the profile's mean (the back-to-back loads' spread).
Time Server::served_wait(const LoadAction& l, Time draw) {
  const RequestOverhead& o = ctx_.setup.models[l.model].overhead;
  if (served_sample_scale_[l.model] > 0) {
    const std::vector<double>& xs = o.served_miss_load_samples;
    const size_t i = std::min(xs.size() - 1, size_t(uniform01(load_rng_) * double(xs.size())));
    return xs[i] * served_sample_scale_[l.model];
  }
  const double mean = ctx_.profile(l.model).load_seconds(l.from, l.to);
  return mean > 0 ? o.served_miss_load * draw / mean : o.served_miss_load;
}

void Server::complete(const RequestOutcome& o, Time now) {
  if (--outstanding_ == 0) emptied_at_ = now;
  sink_.on_outcome(*this, o, now);
}

}  // namespace servelab::sim
