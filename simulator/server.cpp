#include "simulator/server.h"

#include <algorithm>
#include <cmath>

#include "engine/control/draws.h"
#include "simulator/shared_cores.h"

namespace servelab::sim {

namespace {

// The machine terms of a simulation's setup, borrowed from it.
MachineTerms machine_terms(const SimulationSetup& s) {
  MachineTerms t;
  for (const SimModel& m : s.models) {
    t.profiles.push_back(&m.profile);
    t.overheads.push_back(&m.overhead);
  }
  t.noise = s.noise;
  t.jitter = s.jitter;
  t.speed_trace = &s.speed_trace;
  t.speed_drift = &s.speed_drift;
  t.idle_slowdown = &s.idle_slowdown;
  t.exec_tier = s.control.exec_tier;
  return t;
}

}  // namespace

std::shared_ptr<const MachineTables> machine_tables(const SimulationSetup& setup) {
  return std::make_shared<const MachineTables>(machine_terms(setup));
}

Server::Server(RunContext& ctx, OutcomeSink& sink, uint32_t index, uint64_t seed)
    : ctx_(ctx), sink_(sink), index_(index), ctl_(ctx.setup.control),
      contract_(ctx.setup.control),
      machine_(ctx.machine ? ctx.machine : machine_tables(ctx.setup), seed),
      workers_(ctx.setup.control.workers) {}

// Models are made resident in model order as far as tier budgets allow, every tier up to the
// setup's preload tier (the controller's initial placement, as in the engine).
void Server::add_models(const std::function<bool(ModelId)>& hosts) {
  for (ModelId id = 0; id < ctx_.setup.models.size(); ++id) {
    if (hosts && !hosts(id)) continue;
    const SimModel& m = ctx_.setup.models[id];
    ModelInfo info{m.name, m.profile.size_bytes, m.contexts, m.max_batch};
    for (int u = int(Tier::Host); u < kTierCount; ++u)  // eviction policies' cost prior
      if (m.profile.has_load_time(Tier(u - 1), Tier(u)))
        info.load_seconds[u] = m.profile.load_seconds(Tier(u - 1), Tier(u));
    info.batch_seconds = m.profile.mean_batch_seconds();  // SLO-aware batching's cost prior
    const Tier placed = ctl_.add_model_where_it_fits(id, info, ctx_.setup.preload_tier);
    contract_.add_model(id, m.name, placed);
  }
  start_cache_trace(hosts);
}

// The executing tier's trace (SimulationSetup::cache_optimum): asked for, a limited tier, and
// models the controller loads (private copies are no cache). Its start: the models placed.
void Server::start_cache_trace(const std::function<bool(ModelId)>& hosts) {
  const Tier exec = ctx_.setup.control.exec_tier;
  const TierBudget& room = ctx_.setup.control.budgets[int(exec)];
  if (!ctx_.setup.cache_optimum || room.unlimited() || ctx_.setup.private_loads) return;
  cache_trace_ = std::make_unique<CacheTrace>();
  cache_trace_->tier = exec;
  cache_trace_->room = room;
  for (ModelId id = 0; id < ctx_.setup.models.size(); ++id)
    if ((!hosts || hosts(id)) && ctl_.model_state(id).resident[int(exec)])
      cache_trace_->initial.push_back(id);
}

void Server::arrive(RequestId id, Time now) {
  const std::optional<Time> slo = ctx_.slo_of_request(id);
  Request r{id, ctx_.model_of(id), now, slo ? now + *slo : kNever};
  ++outstanding_;
  ++arrived_;
  ctl_.on_arrival(r, now, actions_.out());
  carry_out(now);
}

void Server::arrive_together(std::span<const Request> requests, Time now) {
  outstanding_ += requests.size();
  arrived_ += requests.size();
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
  compute_seconds_ += now - w.computing_since;
  private_compute_start_ = w.computing_since;
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
    // A finished request may still be dispatched while it is held: a backup copy whose
    // other copy answered (its cancellation on the way, or none sent).
    if (!ctx_.window.holds(w) ||
        (ctx_.window.state(w) == RunContext::Done && !ctx_.window.held(w)))
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
  w.size = static_cast<uint32_t>(b.requests.size());
  ++busy_workers_;
  ++batches_;
  batched_requests_ += b.requests.size();
  if (cache_trace_) cache_trace_->access(b.model);
  ++ctx_.in_flight;  // until the batch is done (its private load included)
  if (ctx_.setup.private_loads) {
    const Time loaded = post_on_loader({b.model, Tier::Disk, ctx_.setup.control.exec_tier}, now);
    ctx_.sim.schedule<&Server::on_private_load_done>(loaded, this, b.worker);
  } else {
    compute(b.worker, now);
  }
  if (notify_dequeues_)
    for (const Request& r : b.requests) sink_.on_dequeued(*this, r.id, now);
}

void Server::on_private_load_done(WorkerId worker, Time now) { compute(worker, now); }

// Worker `worker`'s batch computes from `now` on (alone, or on the shared cores).
void Server::compute(WorkerId worker, Time now) {
  Worker& w = workers_[worker];
  w.computing_since = now;
  const Time cost =
      machine_.batch_cost(w.model, w.size, now, w.idle_since, emptied_at_ >= w.idle_since);
  if (ctx_.cores) ctx_.cores->start(*this, worker, cost, now);
  else ctx_.sim.schedule<&Server::on_batch_done>(now + cost, this, worker);
}

// The loader is one FIFO server, as the engine's loader thread is: a costed eviction (the
// engine frees the victim there) and a load each hold it, and each starts when the jobs
// posted before it are done. The controller counts an eviction's space as free at once, as
// the engine's does.
void Server::occupy_loader(const EvictAction& e, Time now) {
  const Time cost = machine_.evict_cost(e.model, e.tier, now);
  if (cost <= 0) return;
  loader_busy_until_ = std::max(now, loader_busy_until_) + cost;
}

void Server::load(const LoadAction& l, Time now) {
  ++ctx_.in_flight;
  if (cache_trace_ && l.to == ctx_.setup.control.exec_tier) ++cache_trace_->loads;
  ctx_.sim.schedule<&Server::on_load_done>(post_on_loader(l, now), this, LoadDone{l.model, l.to});
}

// Queues load `l` on the loader; returns when it ends.
Time Server::post_on_loader(const LoadAction& l, Time now) {
  const Time start = std::max(now, loader_busy_until_);
  loader_busy_until_ = loader_idle_since_ =
      start + machine_.load_cost(l, now, start, emptied_at_ >= loader_idle_since_);
  return loader_busy_until_;
}

void Server::complete(const RequestOutcome& o, Time now) {
  if (--outstanding_ == 0) emptied_at_ = now;
  sink_.on_outcome(*this, o, now);
}

}  // namespace servelab::sim
