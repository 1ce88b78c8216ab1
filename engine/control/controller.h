// The controller: the event-driven state machine shared by the engine and the simulator.
// Events in (arrival, batch done, load done, evict done, timer), actions out (dispatch, load,
// evict, complete) plus next_wakeup(). It never sleeps, spawns threads or reads a clock.
// Not thread-safe: exactly one thread (the engine's control thread, or the simulator loop)
// calls it. Event times must be non-decreasing.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/control/policy_params.h"
#include "engine/control/types.h"

namespace servelab {

struct TierBudget {
  uint64_t bytes = UINT64_MAX;
  uint32_t models = UINT32_MAX;
  // No limit of either kind (the defaults): the tier holds every model and never evicts.
  bool unlimited() const { return bytes == UINT64_MAX && models == UINT32_MAX; }
};

struct ControllerConfig {
  uint32_t workers = 1;              // k workers (batches running at once, all models)
  Time quantum = 0;                  // > 0: Rafiqi's daemon, batching decided at ticks only
  uint32_t max_batch = 128;          // default per-model batch cap
  Tier exec_tier = Tier::Host;       // the tier batches execute from
  std::array<TierBudget, kTierCount> budgets{};  // per tier; Disk is never limited
  uint32_t max_loads_in_flight = 1;  // Rafiqi 3.4: one load at a time
  Time request_timeout = kNever;     // a request still queued at arrival+timeout times out
  uint32_t queue_bound = 0;          // per-model queue bound; 0 = unbounded
  // A request not yet batched at its deadline (SLO): served late (false, the default) or
  // dropped before compute (true: completed with status Dropped at its deadline, or when its
  // model takes a worker if it is not its queue's head then; never batched).
  bool drop_late = false;
  PolicySpec batching{"none", {}};
  PolicySpec eviction{"lru", {}};
  PolicySpec scheduling{"oldest-first", {}};
};

// A batch handed to a worker. The model is resident in the executing tier when the dispatch
// is emitted (a batch whose model was loading is emitted when the load ends).
struct Batch {
  BatchId id = 0;
  WorkerId worker = 0;
  ModelId model = 0;
  std::vector<Request> requests;  // FIFO order
  Time assigned = 0;              // when the worker was reserved
  bool waited_for_load = false;
};

struct LoadAction {
  ModelId model = 0;
  Tier from = Tier::Disk;
  Tier to = Tier::Host;
};

// Space is released in the accounting when the evict is emitted: executors must carry out
// evicts before loads emitted later (the engine's loader is FIFO; the simulator is immediate).
struct EvictAction {
  ModelId model = 0;
  Tier tier = Tier::Host;
};

// Output of one event. The caller owns it, clears it, and carries out every action in it.
struct ActionBuffer {
  std::vector<Batch> dispatches;
  std::vector<LoadAction> loads;
  std::vector<EvictAction> evicts;
  std::vector<RequestOutcome> completions;  // finished, timed out, rejected or failed requests
  // Request lists of carried-out batches, kept for their capacity: the controller fills a
  // new batch's list from here (ActionBuffers::carry_out returns them). Not an action.
  std::vector<std::vector<Request>> request_lists;
  void clear() {
    dispatches.clear();
    loads.clear();
    evicts.clear();
    completions.clear();
  }
  // Takes `o`'s actions into this buffer, which must have none, and leaves `o` this buffer's
  // empty lists (their capacity): pointer swaps of the lists that hold actions, no copies.
  // request_lists stay where they are.
  void take_actions(ActionBuffer& o) noexcept {
    if (!o.dispatches.empty()) dispatches.swap(o.dispatches);
    if (!o.loads.empty()) loads.swap(o.loads);
    if (!o.evicts.empty()) evicts.swap(o.evicts);
    if (!o.completions.empty()) completions.swap(o.completions);
  }
  bool empty() const {
    return dispatches.empty() && loads.empty() && evicts.empty() && completions.empty();
  }
};

struct ModelCounters {
  uint64_t arrivals = 0, completed = 0, batches = 0, hits = 0;  // first: what most requests bump
  uint64_t timeouts = 0, rejected = 0, failed = 0, cancelled = 0;
  uint64_t dropped = 0;  // past their deadline, dropped before compute (drop_late)
  uint64_t misses = 0, loads = 0, evictions = 0;
};

struct ControllerStats {
  uint64_t batches = 0, hits = 0, misses = 0;  // hit/miss: per batch, exec-tier residency
  uint64_t loads = 0, evictions = 0;
  std::array<uint64_t, kTierCount> resident_bytes{};
  std::array<uint32_t, kTierCount> resident_models{};
  std::vector<ModelCounters> per_model;        // indexed by ModelId
};

// Snapshot of one model, for /models endpoints and tests.
struct ModelState {
  bool registered = false;
  std::array<bool, kTierCount> resident{};     // resident[Disk] is always true once added
  // Per tier it is resident in: the bytes evicting it would free there now (its unique bytes
  // among the tier's residents where weights are shared); 0 elsewhere and for Disk.
  std::array<uint64_t, kTierCount> frees_bytes{};
  bool loading = false;
  uint32_t ref_count = 0;                      // batches assigned and not yet done
  uint32_t queued = 0;
  ModelCounters counters;
};

class Controller {
 public:
  // Throws ConfigError for an unknown policy or invalid parameters.
  explicit Controller(ControllerConfig config);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  const ControllerConfig& config() const;

  // Registers a model. `resident_up_to`: the highest tier it is already resident in (and,
  // inclusively, every tier below); preloaded models count against budgets. Throws
  // ConfigError if it does not fit. Ids need not be contiguous but should be small.
  void add_model(ModelId id, const ModelInfo& info, Tier resident_up_to = Tier::Disk);
  // Initial placement, shared by the engine and the simulator: registers the model resident
  // in the highest tier up to `up_to` (capped at the exec tier) whose budget, and every budget
  // below it, has room now, and returns that tier (Disk when none has). Throws like add_model
  // for a model already registered.
  Tier add_model_where_it_fits(ModelId id, const ModelInfo& info, Tier up_to);
  // Removes a model: its queued requests fail, resident copies are evicted. A model with
  // running batches is removed once they are done (its completions are still emitted).
  void remove_model(ModelId id, Time now, ActionBuffer& out);

  void on_arrival(const Request& r, Time now, ActionBuffer& out);
  // Requests that arrive together (a batch an ensemble dispatcher sends a member): all are
  // queued before the batching policy and the scheduler are asked, so they can go as one batch.
  void on_arrivals(std::span<const Request> rs, Time now, ActionBuffer& out);
  // ok=false: every request of the batch completes with Failed.
  void on_batch_done(BatchId batch, bool ok, Time now, ActionBuffer& out);
  // ok=false: requests waiting on the load fail; the model stays where it was.
  void on_load_done(ModelId model, Tier to, bool ok, Time now, ActionBuffer& out);
  void on_evict_done(ModelId model, Tier tier, Time now, ActionBuffer& out);
  void on_timer(Time now, ActionBuffer& out);
  // Cancels request `id` of `model` (its client is gone): a queued request is removed and
  // completes now with Cancelled; one in a batch (running, or held for a load) completes with
  // Cancelled when its batch ends, which still runs: its result is discarded. False when the
  // controller does not hold it (completed, or never arrived). O(queue length + workers x batch).
  bool cancel(RequestId id, ModelId model, Time now, ActionBuffer& out);

  // Earliest time at which on_timer must be called (quantum tick, max-delay expiry, request
  // timeout); kNever when nothing is pending. Calling on_timer early or late is harmless.
  Time next_wakeup() const;

  // Totals and per-model counters as of now (the per-model ones copied out of the model
  // slots at each call: O(models)). Like every method, on the controller's one thread.
  const ControllerStats& stats() const;
  ModelState model_state(ModelId id) const;
  // A model's queued requests and its batches assigned and not done (model_state's `queued`
  // and `ref_count`, without building the rest): 0 for an unknown id. For policies asking
  // per decision.
  uint32_t queued(ModelId id) const;
  uint32_t running(ModelId id) const;
  uint32_t free_workers() const;
  size_t total_queued() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace servelab
