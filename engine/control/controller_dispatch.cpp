// Controller dispatch: readiness (batching decisions), the choice among ready models
// (scheduling policy) and worker assignment, including batches held for a model load.
#include <algorithm>
#include <cassert>
#include <functional>

#include "engine/control/controller_impl.h"

namespace servelab {

// Event mode: a ready model stays ready until a batch is taken.
void Controller::Impl::ask_batching(ModelId id, Time now) {
  ModelSlot& m = models[id];
  const ModelView v = view(id);
  BatchDecision d = batching(id).decide(v, now);
  if (d.size > 0) {
    mark_ready(id, d.size, v);
  } else if (d.wait_until > now && d.wait_until < kNever && d.wait_until != m.wait_until) {
    m.wait_until = d.wait_until;
    wakes.push_back({d.wait_until, id});
    std::push_heap(wakes.begin(), wakes.end(), std::greater<>());
  }
}

void Controller::Impl::mark_ready(ModelId id, uint32_t size, const ModelView& v) {
  ModelSlot& m = models[id];
  assert(size > 0 && !m.queue.empty());
  m.ready_size = size;
  m.wait_until = kNever;
  if (m.ready) return;
  m.ready = true;
  if (keyed) {
    scheduling->key(v, &m.key);
    ready_keys.insert(m.key);
  } else {
    ready.push_back(id);
  }
}

// A model may have become ready long before a worker freed: the batch takes the size the
// policy gives now (its queue or its adaptive cap may have changed), or, if it no longer
// says ready, the size it gave then.
void Controller::Impl::refresh_ready_size(ModelId id, Time now) {
  ModelSlot& m = models[id];
  BatchDecision d = batching(id).decide(view(id), now);
  if (d.size > 0) m.ready_size = d.size;
}

void Controller::Impl::unready(ModelId id) {
  ModelSlot& m = models[id];
  if (!m.ready) return;
  m.ready = false;
  if (keyed) ready_keys.erase(m.key);
  else ready.erase(std::find(ready.begin(), ready.end(), id));
}

void Controller::Impl::rekey(ModelId id) {
  ModelSlot& m = models[id];
  if (!keyed || !m.ready) return;
  ready_keys.erase(m.key);
  scheduling->key(view(id), &m.key);
  ready_keys.insert(m.key);
}

// A ready model can take a worker when it has a free context and is resident, or its load
// is already under way, or its next load hop can start now.
bool Controller::Impl::dispatchable(ModelId id) const {
  const ModelSlot& m = models[id];
  if (m.ref_count >= m.contexts) return false;
  if (m.resident[int(exec())] || load_pending(id)) return true;
  return can_start_load(id);
}

// Keyed policies: the first dispatchable model in key order, O(log n) plus the models
// skipped (waiting for a context or a load). Otherwise the policy picks among all of them.
void Controller::Impl::dispatch_loop(Time now, ActionBuffer& out) {
  while (keyed && !free_workers.empty() && !ready_keys.empty()) {
    const SchedulingPolicy::Key* k = ready_keys.first_where(
        [&](const SchedulingPolicy::Key& k) { return dispatchable(k.model); });
    if (!k) return;
    assign(k->model, now, out);
  }
  while (!free_workers.empty() && !ready.empty()) {
    views.clear();
    for (ModelId id : ready)
      if (dispatchable(id)) views.push_back(view(id));
    if (views.empty()) return;
    size_t pick = views.size() == 1 ? 0 : scheduling->pick(views, now);
    assert(pick < views.size());
    assign(views[std::min(pick, views.size() - 1)].model, now, out);
  }
}

// drop_late: the queue's head requests already past their deadline leave it unbatched
// (completed Dropped). Heads only: with one SLO per model, deadlines rise along the queue.
void Controller::Impl::drop_late_heads(ModelId id, Time now, ActionBuffer& out) {
  ModelSlot& m = models[id];
  while (!m.queue.empty() && m.queue.front().deadline < now) {
    const Request r = m.queue.front();
    m.queue.pop_front();
    --total_queued;
    complete(r, RequestStatus::Dropped, now, out);
  }
}

void Controller::Impl::assign(ModelId id, Time now, ActionBuffer& out) {
  ModelSlot& m = models[id];
  assert(m.ready && !m.queue.empty() && !free_workers.empty());
  if (cfg.drop_late) {
    drop_late_heads(id, now, out);
    if (m.queue.empty()) {  // nothing left to run: the worker stays free
      unready(id);
      return;
    }
  }
  WorkerId w = free_workers.back();
  free_workers.pop_back();
  WorkerSlot& ws = workers[w];
  refresh_ready_size(id, now);
  size_t n = std::min<size_t>({m.ready_size, m.queue.size(), m.max_batch});
  ws.requests.clear();
  ws.cancelled.clear();
  m.queue.take_front(n, ws.requests);
  total_queued -= n;
  // Emptied, with its tick's arrivals counted: its next ticks are quiet (policy.h).
  if (m.queue.empty() && m.arrivals_in_quantum == 0) note_not_in_use(id);
  if (m.observes_batches) batching(id).on_batch_taken(view(id), ws.requests, now);
  unready(id);
  ws.busy = true;
  ws.batch = next_batch++;
  ws.model = id;
  ws.assigned = now;
  ++m.ref_count;
  m.last_dispatch = now;
  ++stats.batches;
  ++counters(id).batches;
  if (m.resident[int(exec())]) {
    ++stats.hits;
    ++counters(id).hits;
    ws.held = false;
    ws.waited_for_load = false;
    emit_dispatch(w, now, out);
  } else {
    ++stats.misses;
    ++counters(id).misses;
    ws.held = true;
    ws.waited_for_load = true;
    ++m.held;
    if (!load_pending(id)) {
      bool started = start_load(id, now, out);
      assert(started && "dispatchable() promised the load could start");
      (void)started;
    }
  }
  if (decides_on_events(id)) decide(id, now);
}

void Controller::Impl::emit_dispatch(WorkerId w, Time now, ActionBuffer& out) {
  WorkerSlot& ws = workers[w];
  ws.started = now;
  note_use(ws.model, now);
  Batch b;
  b.id = ws.batch;
  b.worker = w;
  b.model = ws.model;
  if (!out.request_lists.empty()) {  // a carried-out batch's list, for its capacity
    b.requests = std::move(out.request_lists.back());
    out.request_lists.pop_back();
    if (ws.requests.size() <= 4) {  // a memmove call costs more than a few copies
      b.requests.clear();
      for (const Request& r : ws.requests) b.requests.push_back(r);
    } else {
      b.requests.assign(ws.requests.begin(), ws.requests.end());
    }
  } else {
    b.requests = ws.requests;
  }
  b.assigned = ws.assigned;
  b.waited_for_load = ws.waited_for_load;
  out.dispatches.push_back(std::move(b));
}

// Completes every request of worker w's batch with status s and frees the worker. Used for
// finished batches and for held batches whose load failed or whose model was removed.
void Controller::Impl::finish_worker(WorkerId w, RequestStatus s, Time now, ActionBuffer& out) {
  WorkerSlot& ws = workers[w];
  assert(ws.busy);
  ModelSlot& m = models[ws.model];
  bool ran = !ws.held;
  uint32_t size = uint32_t(ws.requests.size());
  for (const Request& r : ws.requests) {
    bool cancelled = !ws.cancelled.empty() &&
                     std::find(ws.cancelled.begin(), ws.cancelled.end(), r.id) != ws.cancelled.end();
    complete(r, cancelled ? RequestStatus::Cancelled : s, now, out);
    RequestOutcome& o = out.completions.back();
    o.assigned = ws.assigned;
    o.started = ran ? ws.started : kNever;
    o.batch_size = size;
    o.waited_for_load = ws.waited_for_load;
    o.worker = w;
  }
  assert(m.ref_count > 0);
  --m.ref_count;
  if (ws.held) {
    assert(m.held > 0);
    --m.held;
  }
  if (ran && m.batching && m.observes_batches) {
    const ModelView v = view(ws.model);
    BatchingPolicy& policy = batching(ws.model);
    policy.on_batch_done(v, size, now - ws.started, now);
    policy.on_batch_finished(v, ws.requests, now);
  }
  ws.busy = ws.held = false;
  free_workers.push_back(w);
}

}  // namespace servelab
