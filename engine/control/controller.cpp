// Controller events: construction, model registration, arrivals, completions, timers,
// quantum ticks and request timeouts. Dispatch and cache logic live in
// controller_dispatch.cpp and controller_cache.cpp.
#include "engine/control/controller.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <functional>

#include "engine/control/controller_impl.h"
#include "engine/control/policy_registry.h"

namespace servelab {

Controller::Impl::Impl(ControllerConfig c) : cfg(std::move(c)) {
  if (cfg.workers == 0) throw ConfigError("controller: workers must be at least 1");
  if (cfg.exec_tier == Tier::Disk) throw ConfigError("controller: exec tier cannot be disk");
  if (cfg.max_loads_in_flight == 0) throw ConfigError("controller: max_loads_in_flight must be >= 1");
  if (!(cfg.quantum >= 0)) throw ConfigError("controller: quantum must be >= 0");
  if (!(cfg.request_timeout > 0)) throw ConfigError("controller: request_timeout must be > 0");
  if (cfg.max_batch == 0) cfg.max_batch = 1;
  scheduling = PolicyRegistry::scheduling(cfg.scheduling);
  SchedulingPolicy::Key probe;
  keyed = scheduling->key(ModelView{}, &probe);
  for (int t = 1; t < kTierCount; ++t)
    tiers[t] = TierCache(cfg.budgets[t], PolicyRegistry::eviction(cfg.eviction), t == int(Tier::Host));
  // Validate the batching spec now rather than at the first add_model.
  PolicyRegistry::batching(cfg.batching, ModelInfo{});
  workers.resize(cfg.workers);
  for (WorkerId w = cfg.workers; w-- > 0;) free_workers.push_back(w);
}

Controller::Controller(ControllerConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
Controller::~Controller() = default;

const ControllerConfig& Controller::config() const { return impl_->cfg; }

void Controller::add_model(ModelId id, const ModelInfo& info, Tier resident_up_to) {
  Impl& s = *impl_;
  if (id >= s.models.size()) {
    s.models.resize(size_t(id) + 1);
    s.in_use.resize((s.models.size() + 63) / 64);
  }
  ModelSlot& m = s.models[id];
  bool busy = m.ref_count > 0 || m.loading[1] || m.loading[2];
  if (m.registered || busy)
    throw ConfigError("model " + std::to_string(id) + " ('" + info.name + "') is already registered");
  Tier top = std::min(resident_up_to, s.exec());
  for (int t = 1; t <= int(top); ++t)
    if (!m.resident[t] && !s.tiers[t].fits(s.tiers[t].charge_of(info)))
      throw ConfigError("model '" + info.name + "' does not fit in the " +
                        tier_name(Tier(t)) + " budget");
  auto batching = PolicyRegistry::batching(s.cfg.batching, info);
  // A leftover copy from before a remove is kept, now held under the new facts.
  for (int t = 1; t <= int(s.exec()); ++t)
    if (m.added && m.resident[t]) {
      s.tiers[t].drop(m.info);
      s.tiers[t].hold(info);
      s.sync_stats(t);
    }
  m.added = m.registered = true;
  m.info = info;
  m.max_batch = std::max<uint32_t>(1, info.max_batch ? info.max_batch : s.cfg.max_batch);
  m.contexts = std::max<uint32_t>(1, info.contexts);
  m.observes_batches = batching->observes_batches();
  m.on_events = batching->decides_on_events();
  if (batching->stateless()) {
    if (!s.shared_batching) s.shared_batching = std::move(batching);
    m.own_batching.reset();
    m.batching = s.shared_batching.get();
  } else {
    m.own_batching = std::move(batching);
    m.batching = m.own_batching.get();
  }
  m.arrivals_in_quantum = 0;
  m.quanta_seen = s.tick_index;
  m.wait_until = kNever;
  m.last_dispatch = -kNever;
  m.resident[0] = true;
  m.unfittable = false;
  for (int t = 1; t <= int(s.exec()); ++t)
    if (s.tiers[t].too_big(info.size_bytes)) m.unfittable = true;
  for (int t = 0; t < kTierCount; ++t) m.reload_seconds[t] = info.load_seconds[t];
  for (int t = 1; t <= int(top); ++t) {
    if (m.resident[t]) continue;  // a leftover copy from before a remove: keep it
    s.tiers[t].hold(info);
    s.sync_stats(t);
    s.note_resident(id, t, s.last_now);
    m.resident[t] = true;
  }
}

Tier Controller::add_model_where_it_fits(ModelId id, const ModelInfo& info, Tier up_to) {
  Impl& s = *impl_;
  int t = std::min(int(up_to), int(s.exec()));
  auto fits_up_to = [&](int top) {
    for (int u = int(Tier::Host); u <= top; ++u)
      if (!s.tiers[u].fits(s.tiers[u].charge_of(info))) return false;
    return true;
  };
  while (t > int(Tier::Disk) && !fits_up_to(t)) --t;
  add_model(id, info, Tier(t));
  return Tier(t);
}

void Controller::remove_model(ModelId id, Time now, ActionBuffer& out) {
  Impl& s = *impl_;
  s.advance_to(now, out);
  ModelSlot* m = s.slot(id);
  if (!m || !m->registered) return s.pump(now, out);
  m->registered = false;
  s.fail_queued(id, now, out);
  // Batches still waiting for a load fail now; running ones finish normally.
  for (WorkerId w = 0; w < s.workers.size(); ++w)
    if (s.workers[w].busy && s.workers[w].held && s.workers[w].model == id)
      s.finish_worker(w, RequestStatus::Failed, now, out);
  if (m->waiting_load) {
    m->waiting_load = false;
    s.load_waiters.erase(std::find(s.load_waiters.begin(), s.load_waiters.end(), id));
  }
  s.retire_if_removed(id, now, out);
  s.pump(now, out);
}

void Controller::on_arrival(const Request& r, Time now, ActionBuffer& out) {
  on_arrivals(std::span<const Request>(&r, 1), now, out);
}

void Controller::on_arrivals(std::span<const Request> rs, Time now, ActionBuffer& out) {
  Impl& s = *impl_;
  s.advance_to(now, out);
  bool queued = false;
  for (const Request& r : rs) queued = s.enqueue(r, now, out) || queued;
  if (queued)
    for (const Request& r : rs)  // decide() is a no-op once the model is ready
      if (r.model < s.models.size() && s.decides_on_events(r.model)) s.decide(r.model, now);
  s.pump(now, out);
}

// Queues `r` (true), or completes it at once (unknown or removed model, a model that fits no
// tier, a full queue).
bool Controller::Impl::enqueue(const Request& r, Time now, ActionBuffer& out) {
  ModelSlot* m = slot(r.model);
  if (m && m->registered) ++counters(r.model).arrivals;
  if (!m || !m->registered || m->unfittable) {
    complete(r, RequestStatus::Failed, now, out);
    return false;
  }
  if (cfg.queue_bound && m->queue.size() >= cfg.queue_bound) {
    complete(r, RequestStatus::Rejected, now, out);
    return false;
  }
  m->queue.push_back(r);
  ++m->arrivals_in_quantum;
  note_in_use(r.model);
  ++total_queued;
  if (cfg.request_timeout != kNever) {
    Time d = r.arrival + cfg.request_timeout;
    if (!timeouts.empty()) d = std::max(d, timeouts.back().deadline);  // keep FIFO sorted
    timeouts.push_back({d, r.id, r.model});
  }
  if (cfg.drop_late && r.deadline < kNever) {
    deadlines.push_back({r.deadline, r.model});
    std::push_heap(deadlines.begin(), deadlines.end(), std::greater<>());
  }
  return true;
}

void Controller::on_batch_done(BatchId batch, bool ok, Time now, ActionBuffer& out) {
  Impl& s = *impl_;
  s.advance_to(now, out);
  WorkerId w = 0;
  while (w < s.workers.size() &&
         !(s.workers[w].busy && !s.workers[w].held && s.workers[w].batch == batch))
    ++w;
  assert(w < s.workers.size() && "on_batch_done for an unknown batch");
  if (w == s.workers.size()) return s.pump(now, out);
  ModelId id = s.workers[w].model;
  s.finish_worker(w, ok ? RequestStatus::Ok : RequestStatus::Failed, now, out);
  s.retire_if_removed(id, now, out);
  if (s.decides_on_events(id)) s.decide(id, now);
  s.pump(now, out);
}

void Controller::on_load_done(ModelId model, Tier to, bool ok, Time now, ActionBuffer& out) {
  Impl& s = *impl_;
  s.advance_to(now, out);
  s.load_finished(model, to, ok, now, out);
  if (s.decides_on_events(model)) s.decide(model, now);
  s.pump(now, out);
}

void Controller::on_evict_done(ModelId, Tier, Time now, ActionBuffer& out) {
  // Space was released when the evict was emitted; nothing else changes.
  impl_->advance_to(now, out);
  impl_->pump(now, out);
}

void Controller::on_timer(Time now, ActionBuffer& out) {
  impl_->advance_to(now, out);
  impl_->pump(now, out);
}

bool Controller::cancel(RequestId id, ModelId model, Time now, ActionBuffer& out) {
  Impl& s = *impl_;
  s.advance_to(now, out);
  bool held = s.cancel_queued(id, model, now, out) || s.cancel_in_batch(id);
  s.pump(now, out);
  return held;
}

Time Controller::next_wakeup() const {
  const Impl& s = *impl_;
  // A tick with every queue empty only updates the policies' per-quantum state, which
  // advance_to() replays tick by tick, in order, before the next event: no need to wake for it.
  Time t = s.total_queued > 0 || !s.ready.empty() ? s.next_tick() : kNever;
  if (!s.timeouts.empty()) t = std::min(t, s.timeouts.front().deadline);
  if (!s.wakes.empty()) t = std::min(t, s.wakes.front().at);
  if (!s.deadlines.empty()) t = std::min(t, s.deadlines.front().at);
  return t;
}

const ControllerStats& Controller::stats() const {
  // The counters live in the model slots, beside what a request touches anyway.
  auto& per_model = impl_->stats.per_model;
  per_model.resize(impl_->models.size());
  for (size_t m = 0; m < per_model.size(); ++m) per_model[m] = impl_->models[m].counters;
  return impl_->stats;
}

ModelState Controller::model_state(ModelId id) const {
  ModelState st;
  if (id >= impl_->models.size()) return st;
  const ModelSlot& m = impl_->models[id];
  st.registered = m.registered;
  st.resident = m.resident;
  for (int t = 1; t <= int(impl_->exec()); ++t)
    if (m.resident[t]) st.frees_bytes[t] = impl_->tiers[t].freed_by(m.info);
  st.loading = m.loading[1] || m.loading[2] || m.waiting_load;
  st.ref_count = m.ref_count;
  st.queued = uint32_t(m.queue.size());
  st.counters = m.counters;
  return st;
}

uint32_t Controller::queued(ModelId id) const {
  return id < impl_->models.size() ? uint32_t(impl_->models[id].queue.size()) : 0;
}

uint32_t Controller::running(ModelId id) const {
  return id < impl_->models.size() ? impl_->models[id].ref_count : 0;
}

uint32_t Controller::free_workers() const { return uint32_t(impl_->free_workers.size()); }
size_t Controller::total_queued() const { return impl_->total_queued; }

// --- time-driven work ---------------------------------------------------------------------

void Controller::Impl::advance_due(Time now, ActionBuffer& out) {
  // Process due timeouts, late requests (drop_late), quantum ticks and event-mode wake-ups in
  // time order; at equal times in that order.
  for (;;) {
    Time t_out = timeouts.empty() ? kNever : timeouts.front().deadline;
    Time t_late = deadlines.empty() ? kNever : deadlines.front().at;
    Time t_tick = next_tick();
    Time t_wake = wakes.empty() ? kNever : wakes.front().at;
    Time first = std::min({t_out, t_late, t_tick, t_wake});
    if (first > now || first == kNever) break;
    if (t_out == first) {
      TimeoutEntry e = timeouts.front();
      timeouts.pop_front();
      expire(e, out);
    } else if (t_late == first) {
      std::pop_heap(deadlines.begin(), deadlines.end(), std::greater<>());
      const WakeEntry e = deadlines.back();
      deadlines.pop_back();
      drop_at_deadline(e, out);
    } else if (t_tick == first) {
      if (!skip_quiet_ticks(std::min({now, t_out, t_late, t_wake}))) tick(first);
    } else {
      std::pop_heap(wakes.begin(), wakes.end(), std::greater<>());
      WakeEntry e = wakes.back();
      wakes.pop_back();
      if (e.model < models.size() && models[e.model].wait_until == e.at) {
        models[e.model].wait_until = kNever;
        decide(e.model, now);
      }
    }
  }
}

// With no model in use, every tick up to `until` is quiet: it only counts (the policies learn
// of it lazily, batching()), so they are counted at once instead of replayed one by one.
// False when there is a model to visit or no tick is due by `until`.
bool Controller::Impl::skip_quiet_ticks(Time until) {
  if (std::any_of(in_use.begin(), in_use.end(), [](uint64_t w) { return w != 0; })) return false;
  const double q = cfg.quantum;
  const uint64_t before = tick_index;
  // A jump to a tick just below until/q that is due (checked), then exact steps: the ticks
  // done are the ones tick() one by one would do, whatever the rounding of the division.
  const double below = std::floor(until / q) - 2;
  if (below > double(tick_index) && below < 9e15 && double(uint64_t(below)) * q <= until)
    tick_index = uint64_t(below);
  while (next_tick() <= until) ++tick_index;
  return tick_index != before;
}

// Visits the models in use, in id order; the others' ticks are quiet (see policy.h).
void Controller::Impl::tick(Time at) {
  ++tick_index;
  for (size_t w = 0; w < in_use.size(); ++w) {
    for (uint64_t bits = in_use[w]; bits; bits &= bits - 1) {
      const ModelId id = ModelId(64 * w + std::countr_zero(bits));
      ModelSlot& m = models[id];
      if (m.registered) visit_at_tick(id, at);
      if (!m.registered || m.queue.empty()) note_not_in_use(id);
    }
  }
}

void Controller::Impl::visit_at_tick(ModelId id, Time at) {
  ModelSlot& m = models[id];
  BatchingPolicy& policy = batching(id, tick_index - 1);
  const ModelView v = view(id);  // on_quantum changes the policy, not the controller
  policy.on_quantum(v, at);
  m.quanta_seen = tick_index;
  if (!m.ready && !m.queue.empty()) {
    BatchDecision d = policy.decide(v, at);
    if (d.size > 0) mark_ready(id, d.size, v);
  }
  m.arrivals_in_quantum = 0;
}

BatchingPolicy& Controller::Impl::batching(ModelId id, uint64_t upto) {
  ModelSlot& m = models[id];
  if (upto > m.quanta_seen) {
    m.batching->on_quiet_quanta(upto - m.quanta_seen);
    m.quanta_seen = upto;
  }
  return *m.batching;
}

// A request still queued at its deadline is at the head of its model's queue: every request
// pushed before it has already left, dispatched or timed out (the timeout FIFO is in push
// order). Anything else is a stale entry.
void Controller::Impl::expire(const TimeoutEntry& e, ActionBuffer& out) {
  ModelSlot& m = models[e.model];
  if (m.queue.empty() || m.queue.front().id != e.id) return;
  Request r = m.queue.front();
  m.queue.pop_front();
  --total_queued;
  ++counters(e.model).timeouts;
  out.completions.push_back(RequestOutcome{r, RequestStatus::Timeout});
  out.completions.back().finished = e.deadline;
  if (m.queue.empty()) unready(e.model);
  else rekey(e.model);
}

// drop_late: a request still queued at its deadline is answered Dropped then, not when its
// model next takes a worker (which a batching policy waiting for a fuller batch may never
// do). Heads only, as at dispatch.
void Controller::Impl::drop_at_deadline(const WakeEntry& e, ActionBuffer& out) {
  ModelSlot& m = models[e.model];
  bool dropped = false;
  while (!m.queue.empty() && m.queue.front().deadline <= e.at) {
    const Request r = m.queue.front();
    m.queue.pop_front();
    --total_queued;
    complete(r, RequestStatus::Dropped, e.at, out);
    dropped = true;
  }
  if (!dropped) return;
  if (m.queue.empty()) unready(e.model);
  else rekey(e.model);
}

// Drops stale heads so that next_wakeup() is exact.
void Controller::Impl::prune() {
  while (!timeouts.empty()) {
    const TimeoutEntry& e = timeouts.front();
    const ModelQueue& q = models[e.model].queue;
    if (!q.empty() && q.front().id == e.id) break;
    timeouts.pop_front();
  }
  while (!wakes.empty()) {
    const WakeEntry& e = wakes.front();
    if (e.model < models.size() && models[e.model].wait_until == e.at) break;
    std::pop_heap(wakes.begin(), wakes.end(), std::greater<>());
    wakes.pop_back();
  }
  while (!deadlines.empty()) {  // stale: no head of that model is due by then any more
    const WakeEntry& e = deadlines.front();
    const ModelQueue& q = models[e.model].queue;
    if (!q.empty() && q.front().deadline <= e.at) break;
    std::pop_heap(deadlines.begin(), deadlines.end(), std::greater<>());
    deadlines.pop_back();
  }
}

// The queue's timeout entry, if any, goes stale and is pruned like a dispatched request's.
bool Controller::Impl::cancel_queued(RequestId id, ModelId model, Time now, ActionBuffer& out) {
  ModelSlot* m = slot(model);
  if (!m) return false;
  for (size_t i = 0; i < m->queue.size(); ++i) {
    if (m->queue[i].id != id) continue;
    Request r = m->queue[i];
    m->queue.erase(i);
    --total_queued;
    complete(r, RequestStatus::Cancelled, now, out);
    if (m->queue.empty()) unready(model);
    else if (i == 0) rekey(model);
    return true;
  }
  return false;
}

bool Controller::Impl::cancel_in_batch(RequestId id) {
  for (WorkerSlot& ws : workers) {
    if (!ws.busy) continue;
    for (const Request& r : ws.requests) {
      if (r.id != id) continue;
      if (std::find(ws.cancelled.begin(), ws.cancelled.end(), id) == ws.cancelled.end())
        ws.cancelled.push_back(id);
      return true;
    }
  }
  return false;
}

void Controller::Impl::fail_queued(ModelId id, Time now, ActionBuffer& out) {
  ModelSlot& m = models[id];
  while (!m.queue.empty()) {
    complete(m.queue.front(), RequestStatus::Failed, now, out);
    m.queue.pop_front();
    --total_queued;
  }
  unready(id);
  m.wait_until = kNever;
}

}  // namespace servelab
