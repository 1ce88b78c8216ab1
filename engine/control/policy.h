// Policy interfaces: decision functions over read-only views. The clock is a value passed in.
// Instances are owned by the Controller and called only from the controller's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "engine/control/model_queue.h"
#include "engine/control/policy_params.h"
#include "engine/control/types.h"

namespace servelab {

// Read-only snapshot of one model's queue and cache state, built by the controller.
struct ModelView {
  ModelId model = 0;
  const ModelInfo* info = nullptr;
  uint32_t queued = 0;                // requests waiting (not yet in a batch)
  Time oldest_arrival = kNever;       // arrival of the queue head; kNever when empty
  Time oldest_deadline = kNever;      // SLO deadline of the queue head; kNever when none
  uint32_t arrivals_in_quantum = 0;   // arrivals since the previous quantum tick (quantum mode)
  uint32_t max_batch = 1;             // effective max batch for this model
  uint32_t running = 0;               // batches assigned to workers (running or awaiting load)
  bool resident = false;              // resident in the executing tier
  bool loading = false;               // a load into the executing tier is in flight
  Time last_dispatch = -kNever;       // when its last batch was assigned; -inf if never
  // The queued requests themselves, front (oldest) first: for policies whose state is the
  // whole queue (rafiki-rl's waiting times). Valid only during the call; nullptr in views
  // not built by a controller.
  const ModelQueue* queue = nullptr;
};

// What a batching policy wants for one model right now.
struct BatchDecision {
  uint32_t size = 0;         // > 0: ready; dispatch up to this many requests (capped by queue)
  Time wait_until = kNever;  // size == 0: ask again at this time (kNever: at the next event)
};

// Per-model batching policy (one instance per model; may keep per-model state).
// Quantum mode (ControllerConfig::quantum > 0): at every tick the controller calls
// on_quantum() for every registered model that had arrivals in the quantum or has queued
// requests, then decide() for those with queued requests; a model found ready stays ready
// until a worker takes a batch from it. The other ticks are quiet (no arrival, empty queue):
// they reach the policy as a count, on_quiet_quanta(), before its next call of any kind, so
// a tick costs nothing for models nobody uses.
// Event mode (quantum == 0): decide() is called whenever the model could be dispatched.
class BatchingPolicy {
 public:
  virtual ~BatchingPolicy() = default;
  virtual void on_quantum(const ModelView& m, Time now) {}
  // `count` quiet ticks since the policy's last call: what `count` calls of on_quantum with no
  // arrivals and nothing queued would have done, in order.
  virtual void on_quiet_quanta(uint64_t count) {}
  virtual BatchDecision decide(const ModelView& m, Time now) = 0;
  // A batch of `size` finished after `service_time` seconds of compute.
  virtual void on_batch_done(const ModelView& m, uint32_t size, Time service_time, Time now) {}
  // The requests of a batch when a worker takes it (after the decide() that sized it), and
  // again when it finished running (after on_batch_done): for policies that learn from each
  // batch's outcome (rafiki-rl's reward). Batches of one model may finish out of order when
  // it has several contexts. A batch whose load failed or whose model was removed never ran
  // and gets no on_batch_finished.
  virtual void on_batch_taken(const ModelView& m, std::span<const Request> batch, Time now) {}
  virtual void on_batch_finished(const ModelView& m, std::span<const Request> batch, Time now) {}
  // False: the policy overrides none of the three batch callbacks above, and the controller
  // skips them (each costs a view of the model, per batch, on the hot path). Asked once, when
  // the model is added.
  virtual bool observes_batches() const { return true; }
  // True: the controller asks decide() on every arrival, finished batch and load even in
  // quantum mode, as in event mode: a policy that has no quantum (the GPU REST Engine serves
  // each request as it arrives). Asked once, when the model is added.
  virtual bool decides_on_events() const { return false; }
  // True: the policy keeps no state and is built alike for every model of one spec (its
  // decisions depend on its parameters and the view only), so a controller may give all its
  // models one instance. Asked once, when the model is added.
  virtual bool stateless() const { return false; }
};

// What an eviction policy sees of one candidate victim: a model resident in the tier, not in
// use (reference count zero: no batch holds it) and not loading. Size- and cost-aware
// policies (GreedyDual, TrIMS-style) decide on these fields alone.
struct EvictionCandidate {
  ModelId model = 0;
  uint64_t size_bytes = 0;     // what evicting it frees in this tier: its unique bytes
  // Seconds to load it back into this tier from the tier below: the last such load the
  // controller saw, else ModelInfo::load_seconds (0: unknown).
  double reload_seconds = 0;
  Time last_use = -kNever;     // its last load into this tier or batch that used it
  uint64_t uses = 0;           // batches that used it since it was last loaded here
  uint32_t queued = 0;         // requests waiting for it: a victim with a queue comes back soon
};

// Eviction policy for one tier. Told of residency changes and accesses; picks a victim
// among candidates the controller has already filtered (see EvictionCandidate), in ModelId
// order. Never called with an empty span.
class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual void on_load(ModelId m, Time now) = 0;    // m became resident in this tier
  virtual void on_access(ModelId m, Time now) = 0;  // a batch of m started using this tier
  virtual void on_unload(ModelId m, Time now) = 0;  // m left this tier
  virtual size_t pick_victim(std::span<const EvictionCandidate> candidates, Time now) = 0;
};

// Scheduling: when a worker is free and several models are ready, pick one.
// `candidates` is never empty; return an index into it.
class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;
  virtual size_t pick(std::span<const ModelView> candidates, Time now) = 0;

  // A priority order over models: the least key goes first. Keys must be distinct (end with
  // the model id) and depend only on a model's queue head (oldest_arrival, oldest_deadline)
  // and last_dispatch, which change only when the controller says so.
  struct Key {
    double first = 0, second = 0;
    ModelId model = 0;
    auto operator<=>(const Key&) const = default;
  };
  // A policy whose pick() always returns the candidate of least key implements this too; the
  // controller then keeps ready models ordered by key and picks in O(log n) without calling
  // pick(). Policies that need the whole candidate list return false (the default).
  virtual bool key(const ModelView& m, Key* out) const { return false; }
};

}  // namespace servelab
