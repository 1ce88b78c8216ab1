// Private state of the Controller (controller.h), shared by the translation units that
// implement it: controller.cpp (events, quantum ticks, timeouts), controller_dispatch.cpp
// (readiness and worker assignment) and controller_cache.cpp (loads and evictions).
// Not part of the contract; include only from those files and from white-box tests.
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <deque>
#include <memory>
#include <set>
#include <vector>

#include "engine/control/controller.h"
#include "engine/control/model_queue.h"
#include "engine/control/policy.h"
#include "engine/control/ready_set.h"
#include "engine/control/tier_cache.h"

namespace servelab {

// Everything the controller knows about one model id, laid out for a request's way through
// (arrival, readiness, dispatch, completion) at tens of thousands of slots, where each line
// it touches is a cache miss: line 0 holds what every event reads, line 1 the queue's inline
// requests, line 2 the queue's indices and the counters a request bumps. What only
// registration, loads and evictions read (the model's info, load timings) follows.
struct alignas(64) ModelSlot {
  // Line 0.
  bool added = false;       // ever added (resident[Disk] is true from then on)
  bool registered = false;  // accepts arrivals; false once removed
  bool unfittable = false;  // larger than some tier on the load path: requests fail
  bool ready = false;       // in Impl::ready; sticky until a worker takes a batch
  std::array<bool, kTierCount> resident{};
  std::array<bool, kTierCount> loading{};  // a load into that tier is in flight
  bool waiting_load = false;               // in Impl::load_waiters
  bool observes_batches = true;  // batching->observes_batches(), asked once
  bool on_events = false;        // batching->decides_on_events(), asked once
  uint32_t max_batch = 1;
  uint32_t contexts = 1;
  uint32_t ref_count = 0;  // batches assigned and not done (held ones included)
  uint32_t held = 0;       // of those, batches waiting for a load
  uint32_t ready_size = 0;
  uint32_t arrivals_in_quantum = 0;
  BatchingPolicy* batching = nullptr;  // own_batching, or the controller's shared one
  Time last_dispatch = -kNever;
  Time wait_until = kNever;  // event mode: the batching policy asked to be asked again then
  // Lines 1 and 2 (ModelQueue puts its inline requests first).
  ModelQueue queue;
  ModelCounters counters;  // Controller::stats() copies them out
  uint64_t quanta_seen = 0;  // ticks the batching policy has been given (quiet ones as a count)
  SchedulingPolicy::Key key;  // its place in Impl::ready_keys while ready
  // Per tier, for eviction candidates: last load or use, uses since the load, the last load's
  // duration (from ModelInfo::load_seconds until one is seen) and when the current one began.
  std::array<Time, kTierCount> last_use{};
  std::array<uint64_t, kTierCount> uses{};
  std::unique_ptr<BatchingPolicy> own_batching;  // null where the policy is stateless
  ModelInfo info;
  std::array<double, kTierCount> reload_seconds{};
  std::array<Time, kTierCount> load_started{};
};
static_assert(offsetof(ModelSlot, queue) == 64, "ModelSlot: the queue starts line 1");

// One worker: idle, holding a batch whose load is pending, or running a batch.
struct WorkerSlot {
  bool busy = false;
  bool held = false;  // assigned, dispatch not yet emitted (waiting for a load)
  BatchId batch = 0;
  ModelId model = 0;
  std::vector<Request> requests;  // reused across batches
  std::vector<RequestId> cancelled;  // of those, cancelled while in the batch
  Time assigned = kNever;
  Time started = kNever;
  bool waited_for_load = false;
};

struct TimeoutEntry {
  Time deadline;
  RequestId id;
  ModelId model;
};

struct WakeEntry {
  Time at;
  ModelId model;
  bool operator>(const WakeEntry& o) const {
    return at != o.at ? at > o.at : model > o.model;
  }
};

struct Controller::Impl {
  explicit Impl(ControllerConfig c);

  ControllerConfig cfg;
  std::unique_ptr<SchedulingPolicy> scheduling;
  // The batching policy every model shares where it is stateless(): one hot object instead
  // of one cache miss a decision at tens of thousands of models.
  std::unique_ptr<BatchingPolicy> shared_batching;
  std::array<TierCache, kTierCount> tiers;  // [Disk] unused
  std::vector<ModelSlot> models;            // indexed by ModelId
  std::vector<WorkerSlot> workers;
  std::vector<WorkerId> free_workers;       // stack; lowest id on top initially
  // Ready models: ordered by the scheduling policy's key when it has one (keyed), else in the
  // order they became ready (the policy's pick() chooses among them).
  bool keyed = false;
  ReadySet ready_keys;
  std::vector<ModelId> ready;
  std::deque<ModelId> load_waiters;         // held batches whose next load hop cannot start yet
  uint32_t loads_in_flight = 0;
  RingQueue<TimeoutEntry> timeouts;         // push order; deadlines non-decreasing
  std::vector<WakeEntry> wakes;             // min-heap (std::greater) of event-mode wake-ups
  std::vector<WakeEntry> deadlines;         // drop_late: min-heap of queued requests' deadlines
  uint64_t tick_index = 0;                  // ticks done; next tick at (tick_index+1)*quantum
  std::vector<uint64_t> in_use;             // bit per model id: arrivals or a queue, visit at ticks
  BatchId next_batch = 1;
  size_t total_queued = 0;
  Time last_now = 0;
  ControllerStats stats;
  std::vector<ModelView> views;             // scratch, reused
  std::vector<EvictionCandidate> candidates;  // scratch, reused
  mutable std::vector<const ModelInfo*> droppable;  // scratch of can_start_load

  bool quantum_mode() const { return cfg.quantum > 0; }
  // Whether model `id` is decided on events (arrivals, finished batches, loads) rather than
  // at quantum ticks only: in event mode, or when its batching policy has no quantum.
  bool decides_on_events(ModelId id) const { return !quantum_mode() || models[id].on_events; }
  Tier exec() const { return cfg.exec_tier; }
  Time next_tick() const {
    return quantum_mode() ? static_cast<Time>(tick_index + 1) * cfg.quantum : kNever;
  }
  ModelSlot* slot(ModelId m) { return m < models.size() ? &models[m] : nullptr; }
  ModelCounters& counters(ModelId m) { return models[m].counters; }

  // controller.cpp
  bool enqueue(const Request& r, Time now, ActionBuffer& out);  // on_arrivals' one request
  // Due timeouts, late requests, ticks and wake-ups, in time order. Most events find none
  // due: the check is inline, the work (advance_due) out of line.
  void advance_to(Time now, ActionBuffer& out) {
    assert(now >= last_now || now + 1e-9 >= last_now);
    last_now = std::max(last_now, now);
    if (timeouts.empty() && deadlines.empty() && wakes.empty() && next_tick() > now) return;
    advance_due(now, out);
  }
  void advance_due(Time now, ActionBuffer& out);
  void tick(Time at);
  bool skip_quiet_ticks(Time until);  // counts the quiet ticks due by `until` at once
  void visit_at_tick(ModelId m, Time at);
  void expire(const TimeoutEntry& e, ActionBuffer& out);
  void drop_late_heads(ModelId id, Time now, ActionBuffer& out);
  void drop_at_deadline(const WakeEntry& e, ActionBuffer& out);
  // Every event ends here; most find nothing waiting, so each step is asked, inline, only
  // when it has something to do.
  [[gnu::always_inline]] void pump(Time now, ActionBuffer& out) {
    if (!load_waiters.empty()) start_waiting_loads(now, out);
    if (!free_workers.empty() && any_ready()) dispatch_loop(now, out);
    if (!timeouts.empty() || !wakes.empty() || !deadlines.empty()) prune();
  }
  void prune();
  // Request r's outcome, counted for its model, goes out. Once per request: inline.
  [[gnu::always_inline]] void complete(const Request& r, RequestStatus st, Time now,
                                       ActionBuffer& out) {
    if (r.model < models.size() && models[r.model].added) count_outcome(counters(r.model), st);
    out.completions.push_back(RequestOutcome{r, st});
    out.completions.back().finished = now;
  }
  static void count_outcome(ModelCounters& c, RequestStatus st) {
    switch (st) {
      case RequestStatus::Ok: ++c.completed; break;
      case RequestStatus::Timeout: ++c.timeouts; break;
      case RequestStatus::Rejected: ++c.rejected; break;
      case RequestStatus::Cancelled: ++c.cancelled; break;
      case RequestStatus::Dropped: ++c.dropped; break;
      default: ++c.failed; break;
    }
  }
  void fail_queued(ModelId m, Time now, ActionBuffer& out);
  bool cancel_queued(RequestId id, ModelId m, Time now, ActionBuffer& out);
  bool cancel_in_batch(RequestId id);

  void note_in_use(ModelId m) { in_use[m >> 6] |= uint64_t(1) << (m & 63); }
  void note_not_in_use(ModelId m) { in_use[m >> 6] &= ~(uint64_t(1) << (m & 63)); }
  // The model's batching policy, given its quiet ticks up to tick `upto` first.
  BatchingPolicy& batching(ModelId m, uint64_t upto);
  BatchingPolicy& batching(ModelId m) { return batching(m, tick_index); }

  // controller_dispatch.cpp
  // What the policies see of model m. Built several times per batch: inline.
  [[gnu::always_inline]] ModelView view(ModelId id) const {
    const ModelSlot& m = models[id];
    ModelView v;
    v.model = id;
    v.info = &m.info;
    v.queued = uint32_t(m.queue.size());
    if (!m.queue.empty()) {
      v.oldest_arrival = m.queue.front().arrival;
      v.oldest_deadline = m.queue.front().deadline;
    }
    v.arrivals_in_quantum = m.arrivals_in_quantum;
    v.max_batch = m.max_batch;
    v.running = m.ref_count;
    v.resident = m.resident[int(exec())];
    v.loading = load_pending(id);
    v.last_dispatch = m.last_dispatch;
    v.queue = &m.queue;
    return v;
  }
  // Event mode readiness: asks the model's batching policy when it has requests and is not
  // ready yet. Inline: most calls find nothing to ask (the model just emptied or is ready).
  void decide(ModelId id, Time now) {
    const ModelSlot& m = models[id];
    if (m.registered && !m.ready && !m.queue.empty()) ask_batching(id, now);
  }
  void ask_batching(ModelId m, Time now);
  // `v`: the model's view now (the one its policy just decided on).
  void mark_ready(ModelId m, uint32_t size, const ModelView& v);
  void refresh_ready_size(ModelId m, Time now);  // ask decide() again when a worker takes it
  void unready(ModelId m);
  void rekey(ModelId m);                          // its queue head changed while ready
  bool any_ready() const { return keyed ? !ready_keys.empty() : !ready.empty(); }
  bool dispatchable(ModelId m) const;
  // Flattened: a batch's assignment (assign, emit_dispatch, unready, ...) is three calls deep
  // otherwise, once per batch on the hot path.
  [[gnu::flatten]] void dispatch_loop(Time now, ActionBuffer& out);
  void assign(ModelId m, Time now, ActionBuffer& out);
  void emit_dispatch(WorkerId w, Time now, ActionBuffer& out);
  void finish_worker(WorkerId w, RequestStatus s, Time now, ActionBuffer& out);

  // controller_cache.cpp
  Tier next_hop(ModelId m) const;                 // first tier toward exec not resident
  bool load_pending(ModelId id) const {  // a hop is in flight or waiting to start
    const ModelSlot& m = models[id];
    return m.loading[1] || m.loading[2] || m.waiting_load;
  }
  bool can_start_load(ModelId m) const;
  bool start_load(ModelId m, Time now, ActionBuffer& out);
  bool evictable(ModelId m, Tier t) const;
  EvictionCandidate candidate(ModelId m, Tier t) const;
  void sync_stats(int t);  // stats' resident bytes and models of tier t
  void note_resident(ModelId m, int t, Time now);  // loaded into (or added in) tier t
  void note_use(ModelId m, Time now);              // a batch of m starts
  void evict(ModelId m, Tier t, Time now, ActionBuffer& out);
  void start_waiting_loads(Time now, ActionBuffer& out);
  void load_finished(ModelId m, Tier to, bool ok, Time now, ActionBuffer& out);
  void retire_if_removed(ModelId m, Time now, ActionBuffer& out);
};

}  // namespace servelab
