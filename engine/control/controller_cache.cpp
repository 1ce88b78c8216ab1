// Controller cache accounting: inclusive tiers (Disk -> Host -> Device), one load hop per
// load action, at most max_loads_in_flight loads, victims chosen by each tier's eviction
// policy among resident, unused, not-loading models.
#include <algorithm>
#include <cassert>

#include "engine/control/controller_impl.h"

namespace servelab {

void Controller::Impl::sync_stats(int t) {
  stats.resident_bytes[t] = tiers[t].used_bytes();
  stats.resident_models[t] = tiers[t].used_models();
}

Tier Controller::Impl::next_hop(ModelId id) const {
  const ModelSlot& m = models[id];
  for (int t = 1; t <= int(exec()); ++t)
    if (!m.resident[t]) return Tier(t);
  assert(false && "next_hop of a model resident in the exec tier");
  return exec();
}

// A copy may be evicted from tier t when nothing uses the model, it is not loading into t,
// and (inclusive tiers) no copy above t is resident or loading.
bool Controller::Impl::evictable(ModelId id, Tier t) const {
  const ModelSlot& m = models[id];
  if (m.ref_count > 0 || m.waiting_load || !m.resident[int(t)] || m.loading[int(t)]) return false;
  for (int up = int(t) + 1; up < kTierCount; ++up)
    if (m.resident[up] || m.loading[up]) return false;
  return true;
}

EvictionCandidate Controller::Impl::candidate(ModelId id, Tier t) const {
  const ModelSlot& m = models[id];
  int k = int(t);
  return {id, tiers[k].freed_by(m.info), m.reload_seconds[k], m.last_use[k], m.uses[k],
          uint32_t(m.queue.size())};
}

void Controller::Impl::note_resident(ModelId id, int t, Time now) {
  ModelSlot& m = models[id];
  m.last_use[t] = now;
  m.uses[t] = 0;
  tiers[t].became_resident(id, now);
}

void Controller::Impl::note_use(ModelId id, Time now) {
  ModelSlot& m = models[id];
  for (int t = 1; t <= int(exec()); ++t) {
    m.last_use[t] = now;
    ++m.uses[t];
    tiers[t].accessed(id, now);
  }
}

bool Controller::Impl::can_start_load(ModelId id) const {
  if (loads_in_flight >= cfg.max_loads_in_flight) return false;
  int t = int(next_hop(id));
  droppable.clear();
  for (ModelId r : tiers[t].residents())
    if (evictable(r, Tier(t))) droppable.push_back(&models[r].info);
  return tiers[t].fits_after_dropping(models[id].info, droppable);
}

// Starts the next hop of model id's load, evicting victims to make room. Returns false (and
// changes nothing) when the load limit is reached or no room can be made now.
bool Controller::Impl::start_load(ModelId id, Time now, ActionBuffer& out) {
  if (!can_start_load(id)) return false;
  ModelSlot& m = models[id];
  int t = int(next_hop(id));
  TierCache& tier = tiers[t];
  candidates.clear();
  for (ModelId r : tier.residents())
    if (evictable(r, Tier(t))) candidates.push_back(candidate(r, Tier(t)));
  while (!tier.fits(tier.charge_of(m.info))) {
    assert(!candidates.empty());
    size_t i = tier.eviction().pick_victim(candidates, now);
    assert(i < candidates.size());
    i = std::min(i, candidates.size() - 1);
    ModelId victim = candidates[i].model;
    candidates.erase(candidates.begin() + i);
    evict(victim, Tier(t), now, out);
    // A victim's shared parts may now be unique to a model that shared them.
    if (tier.shares_any())
      for (EvictionCandidate& c : candidates) c.size_bytes = tier.freed_by(models[c.model].info);
  }
  tier.hold(m.info);
  sync_stats(t);
  m.loading[t] = true;
  m.load_started[t] = now;
  ++loads_in_flight;
  ++stats.loads;
  ++counters(id).loads;
  out.loads.push_back(LoadAction{id, Tier(t - 1), Tier(t)});
  return true;
}

void Controller::Impl::evict(ModelId id, Tier t, Time now, ActionBuffer& out) {
  ModelSlot& m = models[id];
  assert(m.resident[int(t)] && !m.loading[int(t)] && m.ref_count == 0);
  m.resident[int(t)] = false;
  tiers[int(t)].drop(m.info);
  tiers[int(t)].left(id, now);
  sync_stats(int(t));
  ++stats.evictions;
  ++counters(id).evictions;
  out.evicts.push_back(EvictAction{id, t});
}

void Controller::Impl::start_waiting_loads(Time now, ActionBuffer& out) {
  for (size_t i = 0; i < load_waiters.size();) {
    if (loads_in_flight >= cfg.max_loads_in_flight) return;
    ModelId id = load_waiters[i];
    if (start_load(id, now, out)) {
      models[id].waiting_load = false;
      load_waiters.erase(load_waiters.begin() + i);
    } else {
      ++i;
    }
  }
}

void Controller::Impl::load_finished(ModelId id, Tier to, bool ok, Time now, ActionBuffer& out) {
  ModelSlot* mp = slot(id);
  int t = int(to);
  assert(mp && t > 0 && mp->loading[t] && "load_done for a load that was not started");
  if (!mp || t <= 0 || t >= kTierCount || !mp->loading[t]) return;
  ModelSlot& m = *mp;
  m.loading[t] = false;
  --loads_in_flight;
  if (ok) {
    m.resident[t] = true;
    m.reload_seconds[t] = now - m.load_started[t];
    note_resident(id, t, now);
    if (to == exec()) {
      for (WorkerId w = 0; w < workers.size(); ++w) {
        WorkerSlot& ws = workers[w];
        if (!ws.busy || !ws.held || ws.model != id) continue;
        ws.held = false;
        --m.held;
        emit_dispatch(w, now, out);
      }
    } else if (m.held > 0 && !start_load(id, now, out)) {
      m.waiting_load = true;
      load_waiters.push_front(id);  // a chained hop goes before loads not yet begun
    }
  } else {
    tiers[t].drop(m.info);
    sync_stats(t);
    for (WorkerId w = 0; w < workers.size(); ++w)
      if (workers[w].busy && workers[w].held && workers[w].model == id)
        finish_worker(w, RequestStatus::Failed, now, out);
  }
  retire_if_removed(id, now, out);
}

// A removed model's copies are evicted once no batch uses it and no load of it is in flight.
void Controller::Impl::retire_if_removed(ModelId id, Time now, ActionBuffer& out) {
  ModelSlot& m = models[id];
  if (m.registered || !m.added || m.ref_count > 0 || m.loading[1] || m.loading[2]) return;
  for (int t = int(exec()); t >= 1; --t)
    if (m.resident[t]) evict(id, Tier(t), now, out);
}

}  // namespace servelab
